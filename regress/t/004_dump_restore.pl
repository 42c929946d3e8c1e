# pg_dump | pg_restore of a database that uses local_cache restores, whatever order the dump
# creates objects in: enabled tables with their capture triggers and RESP prefixes, and foreign
# tables imported into a schema that sorts before the tables' (pg_dump creates them first).
# In the restored database mget, the foreign tables and RESP serve the rows and follow writes.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(usleep);

my $resp_port = PostgreSQL::Test::Cluster::get_free_port();
my $node = PostgreSQL::Test::Cluster->new('main');
$node->init;
$node->append_conf('postgresql.conf', qq{
shared_preload_libraries = 'local_cache'
local_cache.memory = 16MB
local_cache.resp_port = $resp_port
local_cache.resp_workers = 1
local_cache.resp_role = 'resp_reader'
local_cache.resp_database = 'restored'
});
$node->start;

$node->safe_psql('postgres', q{CREATE ROLE resp_reader; CREATE DATABASE source});
$node->safe_psql('source', q{
CREATE EXTENSION local_cache;
CREATE TABLE items (id bigint PRIMARY KEY, value text);
INSERT INTO items SELECT g, 'v' || g FROM generate_series(1, 20) g;
CREATE TABLE orders (id int PRIMARY KEY, item_id bigint REFERENCES items);
INSERT INTO orders SELECT g, g FROM generate_series(1, 5) g;
SELECT local_cache.enable('items', resp_prefix => 'item');
GRANT SELECT ON items TO resp_reader;
CREATE SCHEMA cache;
IMPORT FOREIGN SCHEMA public FROM SERVER local_cache INTO cache;
});

my $dump = $node->basedir . '/source.dump';
$node->command_ok([ 'pg_dump', '-Fc', '-d', $node->connstr('source'), '-f', $dump ], 'pg_dump');
$node->safe_psql('postgres', 'CREATE DATABASE restored');
$node->command_ok([ 'pg_restore', '--exit-on-error', '-d', $node->connstr('restored'), $dump ],
	'pg_restore, foreign tables before tables');

is($node->safe_psql('restored', q{SELECT relid::text || ' ' || resp_prefix FROM local_cache.tables}),
	'items item', 'the registry is restored with its RESP prefix');
is($node->safe_psql('restored', q{
	SELECT string_agg(tgname || ':' || tgenabled::text, ',' ORDER BY tgname) FROM pg_trigger WHERE tgrelid = 'items'::regclass AND tgname LIKE 'local_cache%'}),
	'local_cache_invalidate:A,local_cache_invalidate_truncate:A,local_cache_mark_written:A',
	'the capture triggers are restored, enabled ALWAYS');

sub resp
{
	my $out = `timeout 30 redis-cli -p $resp_port @_ 2>&1`;
	$out =~ s/\s+$//;
	return $out;
}

sub check_paths
{
	my ($label, $id, $value) = @_;
	for my $round ('cold', 'warm') {
		is($node->safe_psql('restored', "SELECT local_cache.mget_json('items', '{$id}')"),
			qq{[{"id":$id,"value":"$value"}]}, "$label: mget ($round)");
		is($node->safe_psql('restored', "SELECT value FROM cache.items WHERE id = $id"),
			$value, "$label: foreign table ($round)");
		is(resp("GET item:$id"), qq{{"id":$id,"value":"$value"}}, "$label: RESP ($round)");
	}
}

# The launcher started the RESP workers once the database existed; wait for the extension.
my $served = '';
for (1 .. 300) {
	$served = resp('GET item:1');
	last if $served eq '{"id":1,"value":"v1"}';
	usleep(100_000);
}
is($served, '{"id":1,"value":"v1"}', 'RESP serves the restored database');

check_paths('restored', 3, 'v3');
is($node->safe_psql('restored', q{
	SELECT string_agg(i.value, ',' ORDER BY o.id) FROM orders o JOIN cache.items i ON i.id = o.item_id}),
	'v1,v2,v3,v4,v5', 'a join through the foreign table');
$node->safe_psql('restored', q{UPDATE items SET value = 'changed' WHERE id = 3});
check_paths('after UPDATE in the restored database', 3, 'changed');
$node->safe_psql('restored', q{TRUNCATE orders, items; INSERT INTO items VALUES (3, 'after truncate')});
check_paths('after TRUNCATE in the restored database', 3, 'after truncate');

# The dump of the restored database restores again (the round trip is stable).
my $dump2 = $node->basedir . '/restored.dump';
$node->command_ok([ 'pg_dump', '-Fc', '-d', $node->connstr('restored'), '-f', $dump2 ], 'pg_dump of the restored database');
$node->safe_psql('postgres', 'CREATE DATABASE again');
$node->command_ok([ 'pg_restore', '--exit-on-error', '-d', $node->connstr('again'), $dump2 ], 'and pg_restore again');
is($node->safe_psql('again', q{SELECT local_cache.mget_json('items', '{3}')}), '[{"id":3,"value":"after truncate"}]',
	'the second restore serves too');

$node->stop;
done_testing();
