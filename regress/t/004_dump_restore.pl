# pg_dump | pg_restore of a database that uses local_cache restores, whatever order the dump
# creates objects in: enabled tables with their capture triggers and RESP prefixes, and foreign
# tables imported into a schema that sorts before the tables' (pg_dump creates them first).
# In the restored database mget, the foreign tables and RESP serve the rows and follow writes.
# The dump restores with --exit-on-error into a database that already has the extension (the
# schema local_cache belongs to the extension, so the dump does not create it). A per-table dump
# (pg_dump -t) brings the capture triggers without the registry: enable() adopts them, disable()
# removes them, and a user's trigger of the same name is refused with a hint.
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

# Into a database that already has the extension: the dump's CREATE EXTENSION IF NOT EXISTS is
# all it says of the extension (no CREATE SCHEMA local_cache to fail on).
$node->safe_psql('postgres', 'CREATE DATABASE prepared');
$node->safe_psql('prepared', 'CREATE EXTENSION local_cache');
$node->command_ok([ 'pg_restore', '--exit-on-error', '-d', $node->connstr('prepared'), $dump ],
	'pg_restore --exit-on-error into a database that already has the extension');
is($node->safe_psql('prepared', q{SELECT relid::text || ' ' || resp_prefix FROM local_cache.tables}),
	'items item', 'there too the registry is restored');
is($node->safe_psql('prepared', q{SELECT local_cache.mget_json('items', '{2}')}), '[{"id":2,"value":"v2"}]',
	'and mget serves');

# A per-table dump: the table with its capture triggers, not the registry row.
my $items_dump = $node->basedir . '/items.dump';
$node->command_ok([ 'pg_dump', '-Fc', '-t', 'items', '-d', $node->connstr('source'), '-f', $items_dump ],
	'pg_dump -t items');
for my $db ('one_table', 'one_table_off', 'one_table_clash')
{
	$node->safe_psql('postgres', "CREATE DATABASE $db");
	$node->safe_psql($db, 'CREATE EXTENSION local_cache');
	$node->command_ok([ 'pg_restore', '--exit-on-error', '-d', $node->connstr($db), $items_dump ],
		"pg_restore of the per-table dump into $db");
}
is($node->safe_psql('one_table', q{SELECT count(*) FROM local_cache.tables}), '0',
	'the per-table dump brings no registry row');
$node->safe_psql('one_table', q{SELECT local_cache.enable('items', resp_prefix => 'item')});
is($node->safe_psql('one_table', q{
	SELECT string_agg(tgname || ':' || tgenabled::text, ',' ORDER BY tgname) FROM pg_trigger WHERE tgrelid = 'items'::regclass AND tgname LIKE 'local_cache%'}),
	'local_cache_invalidate:A,local_cache_invalidate_truncate:A,local_cache_mark_written:A',
	'enable() adopts the restored capture triggers');
is($node->safe_psql('one_table', q{SELECT local_cache.mget_json('items', '{4}')}), '[{"id":4,"value":"v4"}]',
	'the adopted table is served');
$node->safe_psql('one_table', q{UPDATE items SET value = 'new' WHERE id = 4});
is($node->safe_psql('one_table', q{SELECT local_cache.mget_json('items', '{4}')}), '[{"id":4,"value":"new"}]',
	'and its writes invalidate');

my ($rc, $out, $err) = $node->psql('one_table_off', q{SELECT local_cache.disable('items')});
is($rc, 0, 'disable() of a restored table that was never enabled here');
like($err, qr/NOTICE:  table "public.items" was not enabled in local_cache: removed the capture triggers it had/,
	'says it removed the triggers');
is($node->safe_psql('one_table_off', q{SELECT count(*) FROM pg_trigger WHERE tgrelid = 'items'::regclass AND NOT tgisinternal}),
	'0', 'and they are gone');

$node->safe_psql('one_table_clash', q{
DROP TRIGGER local_cache_invalidate ON items;
CREATE FUNCTION audit() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN RETURN NULL; END $$;
CREATE TRIGGER local_cache_invalidate AFTER INSERT ON items FOR EACH ROW EXECUTE FUNCTION audit();
});
($rc, $out, $err) = $node->psql('one_table_clash', q{SELECT local_cache.enable('items')});
like($err, qr/ERROR:  trigger "local_cache_invalidate" on table "public.items" is not one of local_cache.s.*HINT:  Rename that trigger/s,
	"enable() refuses to replace a user's trigger that has one of its names");
is($node->safe_psql('one_table_clash', q{SELECT tgfoid::regprocedure FROM pg_trigger WHERE tgname = 'local_cache_invalidate'}),
	'audit()', "and leaves that trigger alone");
$node->safe_psql('one_table_clash', q{ALTER TRIGGER local_cache_invalidate ON items RENAME TO audit_items});
$node->safe_psql('one_table_clash', q{SELECT local_cache.enable('items')});
is($node->safe_psql('one_table_clash', q{SELECT local_cache.mget_json('items', '{5}')}), '[{"id":5,"value":"v5"}]',
	'following the hint, enable() works');

$node->stop;
done_testing();
