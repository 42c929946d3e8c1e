# The README's first SQL block runs verbatim on an empty database of a server set up as the
# README says, and its RESP example then answers.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(usleep);

my $readme = slurp_file("$ENV{TESTDIR}/README.md");
my ($block) = $readme =~ /```sql\n(.*?)```/s;
ok(defined $block && $block =~ /CREATE EXTENSION local_cache/, 'the README has a SQL block');

my $resp_port = PostgreSQL::Test::Cluster::get_free_port();
my $node = PostgreSQL::Test::Cluster->new('main');
$node->init;
$node->append_conf('postgresql.conf', qq{
shared_preload_libraries = 'local_cache'
local_cache.resp_port = $resp_port
local_cache.resp_role = 'cache_reader'
});
$node->start;

my ($ret, $stdout, $stderr) = $node->psql('postgres', $block, on_error_stop => 1);
is($ret, 0, 'the block runs without an error');
is($stderr, '', '... and without a warning');
like($stdout, qr/\{"id":3,"value":"value 3"\},\{"id":1,"value":"value 1"\},\{"id":3,"value":"value 3"\},null/,
	'mget answers in input order, duplicates kept, null for the missing key');

my $got = '';
for (1 .. 100) {
	$got = `timeout 10 redis-cli -p $resp_port MGET items:1 items:999999 2>&1`;
	last if $got =~ /value 1/;
	usleep(100_000);
}
is($got, qq{{"id":1,"value":"value 1"}\n\n}, 'RESP serves the rows as the README shows');

# The default local_cache.resp_workers (0): one worker per four CPU cores, at least one.
my $cores = `getconf _NPROCESSORS_ONLN`;
chomp $cores;
my $expected_workers = int($cores / 4) || 1;
$expected_workers = 64 if $expected_workers > 64;
ok($node->poll_query_until('postgres',
		q{SELECT count(*) FROM pg_stat_activity WHERE backend_type = 'local_cache RESP worker'}, $expected_workers),
	"the default runs one RESP worker per four CPU cores ($cores cores: $expected_workers)");

$node->stop;
done_testing();
