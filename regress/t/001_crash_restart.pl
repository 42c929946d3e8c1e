# Crashes and FATAL errors leave no stale or stuck cache entry behind.
#
# A backend killed with SIGKILL makes the postmaster restart every process and re-create
# shared memory, so the cache starts empty; a backend ended with FATAL aborts its
# transaction, whose changes were never invalidated nor visible. Either way mget must
# return exactly what the table holds, and the cache must fill again.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

my $node = PostgreSQL::Test::Cluster->new('main');
$node->init;
$node->append_conf('postgresql.conf', qq{
shared_preload_libraries = 'local_cache'
local_cache.memory = 16MB
restart_after_crash = on
});
$node->start;

$node->safe_psql('postgres', q{
CREATE EXTENSION local_cache;
CREATE TABLE items (id bigint PRIMARY KEY, value text);
INSERT INTO items SELECT g, 'v' || g FROM generate_series(1, 100) g;
SELECT local_cache.enable('items');
});

# mget of keys 1..101 (101 is missing) against the same rows read with SQL.
my $same_as_table = q{
SELECT local_cache.mget_json('items', k)::text = array_to_json(
         (SELECT array_agg(i ORDER BY u.ord)
            FROM unnest(k) WITH ORDINALITY u(key, ord) LEFT JOIN items i ON i.id = u.key),
         false)::text
  FROM (SELECT array_agg(g)::bigint[] AS k FROM generate_series(1, 101) g) keys
};

sub warm_and_check
{
	my ($label) = @_;
	is($node->safe_psql('postgres', $same_as_table), 't', "$label: mget equals the table (cold)");
	is($node->safe_psql('postgres', $same_as_table), 't', "$label: mget equals the table (warm)");
	cmp_ok($node->safe_psql('postgres', 'SELECT entries FROM local_cache.stats_global'),
		'>=', 100, "$label: the cache holds the rows");
}

sub wait_for_restart
{
	$node->poll_query_until('postgres', 'SELECT 1', '1')
	  or die 'the server did not come back after the crash';
}

warm_and_check('before any crash');

# A backend with an uncommitted update is killed: crash restart, the cache starts empty.
my $writer = $node->background_psql('postgres', on_error_stop => 0);
$writer->query_safe(q{BEGIN; UPDATE items SET value = 'uncommitted' WHERE id = 1;});
my $pid = $writer->query_safe('SELECT pg_backend_pid()');
kill 'KILL', $pid;
$writer->quit;
wait_for_restart();
is($node->safe_psql('postgres', 'SELECT entries FROM local_cache.stats_global'),
	'0', 'after SIGKILL: the cache was re-created empty');
is($node->safe_psql('postgres', q{SELECT local_cache.mget_json('items', '{1}')}),
	'[{"id":1,"value":"v1"}]', 'after SIGKILL: the uncommitted update is not served');
warm_and_check('after SIGKILL');

# A committed update survives a crash (it is in the table, not only in the cache).
$node->safe_psql('postgres', q{UPDATE items SET value = 'committed' WHERE id = 3});
is($node->safe_psql('postgres', q{SELECT local_cache.mget_json('items', '{3}')}),
	'[{"id":3,"value":"committed"}]', 'committed update served before the crash');
my $idle = $node->background_psql('postgres', on_error_stop => 0);
kill 'KILL', $idle->query_safe('SELECT pg_backend_pid()');
$idle->quit;
wait_for_restart();
is($node->safe_psql('postgres', q{SELECT local_cache.mget_json('items', '{3}')}),
	'[{"id":3,"value":"committed"}]', 'committed update served after the crash');
warm_and_check('after the second SIGKILL');

# FATAL in the middle of a writing transaction: no restart; nothing of it is served.
$writer = $node->background_psql('postgres', on_error_stop => 0);
$writer->query_safe(q{BEGIN; UPDATE items SET value = 'terminated' WHERE id = 2;});
$pid = $writer->query_safe('SELECT pg_backend_pid()');
$node->safe_psql('postgres', "SELECT pg_terminate_backend($pid, 10000)");
$writer->quit;
is($node->safe_psql('postgres', q{SELECT local_cache.mget_json('items', '{2}')}),
	'[{"id":2,"value":"v2"}]', 'after FATAL: the aborted update is not served');
cmp_ok($node->safe_psql('postgres', 'SELECT entries FROM local_cache.stats_global'),
	'>=', 100, 'after FATAL: the cache kept its entries');
warm_and_check('after FATAL');

# And the cache still follows writes.
$node->safe_psql('postgres', q{UPDATE items SET value = 'after all that' WHERE id = 2});
is($node->safe_psql('postgres', q{SELECT local_cache.mget_json('items', '{2}')}),
	'[{"id":2,"value":"after all that"}]', 'invalidation still works');

$node->stop;
done_testing();
