# The RESP server's background-worker slots: the launcher, local_cache.resp_workers workers and
# local_cache.resp_write_workers write workers come out of max_worker_processes, which parallel query draws on too. When what is left is
# below max_parallel_workers the server says so at start, with the numbers (parallel queries
# would otherwise launch fewer workers than planned, silently); when enough is left, or RESP is
# off (the default), it says nothing.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

my $warning = qr/WARNING:  local_cache RESP: the launcher, \d+ workers and \d+ write workers take \d+ of max_worker_processes/;

# start_with NAME CONF: a server started with CONF; returns its log once it serves queries.
sub start_with
{
	my ($name, $conf) = @_;
	my $node = PostgreSQL::Test::Cluster->new($name);
	$node->init;
	$node->append_conf('postgresql.conf', "shared_preload_libraries = 'local_cache'\n$conf");
	$node->start;
	is($node->safe_psql('postgres', 'SELECT 1'), '1', "$name: the server runs");
	my $log = slurp_file($node->logfile);
	$node->stop;
	return $log;
}

my $port = PostgreSQL::Test::Cluster::get_free_port();
my $log = start_with('crowded', qq{
local_cache.resp_port = $port
local_cache.resp_workers = 6
local_cache.resp_write_workers = 1
max_worker_processes = 8
max_parallel_workers = 8
});
like($log,
	qr/WARNING:  local_cache RESP: the launcher, 6 workers and 1 write workers take 8 of max_worker_processes = 8 background worker slots, leaving 0 for max_parallel_workers = 8/,
	'resp_workers = 6 with max_worker_processes = 8: a warning with the numbers');
like($log, qr/HINT:  Raise max_worker_processes to 16, or lower local_cache.resp_workers or local_cache.resp_write_workers\./,
	'the hint names the max_worker_processes that leaves room for both');

$port = PostgreSQL::Test::Cluster::get_free_port();
$log = start_with('roomy', qq{
local_cache.resp_port = $port
local_cache.resp_workers = 2
max_worker_processes = 13
max_parallel_workers = 8
});
unlike($log, $warning, '1 + resp_workers + resp_write_workers + max_parallel_workers <= max_worker_processes: no warning');

$log = start_with('defaults', '');
unlike($log, $warning, 'the defaults (RESP off): no warning');

done_testing();
