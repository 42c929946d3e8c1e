# Two servers of the same OS user configured with the same local_cache.resp_port (a standby on
# its primary's host copies the primary's settings): the RESP workers of one server share the
# port through SO_REUSEPORT, which the kernel would let the second server join, splitting the
# clients between them. The second server must fail to listen, as PostgreSQL's own port does
# ("Address already in use", logged, retried), and take the port once the first one stops.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

my $resp_port = PostgreSQL::Test::Cluster::get_free_port();

sub start_server
{
	my ($name) = @_;
	my $node = PostgreSQL::Test::Cluster->new($name);
	$node->init;
	$node->append_conf('postgresql.conf', qq{
shared_preload_libraries = 'local_cache'
local_cache.resp_port = $resp_port
local_cache.resp_workers = 2
local_cache.resp_write_workers = 0
local_cache.resp_role = 'postgres'
});
	$node->start;
	$node->safe_psql('postgres', 'CREATE EXTENSION local_cache');
	return $node;
}

# Which server answers a new RESP connection: INFO server's process_id is the worker's pid.
my %server_of_worker;
sub note_workers
{
	my ($node, $name) = @_;
	for my $pid (split /\n/, $node->safe_psql('postgres',
		q{SELECT pid FROM pg_stat_activity WHERE backend_type = 'local_cache RESP worker'}))
	{
		$server_of_worker{$pid} = $name;
	}
}
sub answering
{
	my $out = `redis-cli -p $resp_port INFO server 2>&1`;
	return $out =~ /^process_id:(\d+)/m ? ($server_of_worker{$1} // "worker $1") : 'nobody';
}

sub wait_for_log
{
	my ($node, $pattern) = @_;
	for (1 .. 300) {
		return 1 if slurp_file($node->logfile) =~ $pattern;
		select(undef, undef, undef, 0.1);
	}
	return 0;
}

my $first = start_server('first');
my $second;
for (1 .. 100) { note_workers($first, 'first'); last if answering() eq 'first'; select(undef, undef, undef, 0.1); }
is(answering(), 'first', 'the first server serves the RESP port');

$second = start_server('second');
note_workers($second, 'second');
ok(wait_for_log($second, qr/local_cache RESP: could not listen on "[^"]+" port $resp_port: Address already in use; retrying in \d+ s/),
	'the second server logs that the port is in use');
like(slurp_file($second->logfile), qr/HINT:  Give each server its own local_cache\.resp_port\./, 'with a hint');
my %answered;
$answered{answering()}++ for 1 .. 24;
is_deeply(\%answered, { first => 24 }, 'every one of 24 connections reaches the first server');
unlike(slurp_file($first->logfile), qr/could not listen/, 'the first server was not disturbed');

$first->stop;
my $taken = 0;
for (1 .. 300) {
	note_workers($second, 'second');
	if (answering() eq 'second') { $taken = 1; last; }
	select(undef, undef, undef, 0.1);
}
ok($taken, 'once the first server stopped, the second one takes the port (its retry)');
$second->stop;
done_testing();
