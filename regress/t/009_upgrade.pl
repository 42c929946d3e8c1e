# ALTER EXTENSION local_cache UPDATE from every shipped version keeps the DBA's work and ends
# with the catalog of a fresh install of the current version:
#
#  - for 1.0, 1.1, 1.2 and 1.3, installed as releases before 1.4 installed them (the extension
#    recorded in its schema, the schema outside it), with GRANTs and REVOKEs on mget, mget_json,
#    the counter functions and the stats views, views of the user's over the stats views and a
#    cached table, the update gives the same functions, privileges (pg_init_privs and
#    pg_shdepend included), views, types, triggers and extension members as CREATE EXTENSION
#    followed by the same DBA work, and the user's views still answer; so does 1.2 as this
#    release installs it (the schema already a member);
#  - the updated 1.0 database dumps and restores (--exit-on-error) into a database that has the
#    extension with all the DBA's grants: they were not taken for the extension's own;
#  - a view that calls mget_json(regclass, bigint[]) stops the update to 1.3 with an error that
#    names it and a hint that works;
#  - DROP EXTENSION removes the schema local_cache, after an upgrade as after a fresh install.
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
});
$node->start;
$node->safe_psql('postgres', 'CREATE ROLE app; CREATE ROLE reader');

my $current = $node->safe_psql('postgres',
	q{SELECT default_version FROM pg_available_extensions WHERE name = 'local_cache'});

# What CREATE EXTENSION made of the control file's `schema = local_cache` before 1.4: the
# extension recorded in the schema it depends on, the schema not one of its members.
my $as_before_1_4 = q{
DELETE FROM pg_depend WHERE classid = 'pg_namespace'::regclass AND objid = 'local_cache'::regnamespace AND deptype = 'e';
UPDATE pg_extension SET extnamespace = 'local_cache'::regnamespace WHERE extname = 'local_cache';
INSERT INTO pg_depend VALUES ('pg_extension'::regclass, (SELECT oid FROM pg_extension WHERE extname = 'local_cache'), 0,
                              'pg_namespace'::regclass, 'local_cache'::regnamespace, 0, 'n');
};

# A DBA's work around the extension; $keys is the type of mget's keys in the installed version.
sub dba_work
{
	my ($keys) = @_;
	return qq{
CREATE TABLE items (id bigint PRIMARY KEY, value text);
INSERT INTO items SELECT g, 'v' || g FROM generate_series(1, 5) g;
SELECT local_cache.enable('items');
GRANT SELECT ON items TO app;
REVOKE EXECUTE ON FUNCTION local_cache.mget(regclass, $keys) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION local_cache.mget(regclass, $keys) TO app;
GRANT EXECUTE ON FUNCTION local_cache.mget_json(regclass, $keys) TO reader WITH GRANT OPTION;
REVOKE EXECUTE ON FUNCTION local_cache.table_counters() FROM PUBLIC;
GRANT EXECUTE ON FUNCTION local_cache.table_counters() TO reader;
REVOKE SELECT ON local_cache.stats FROM PUBLIC;
GRANT SELECT ON local_cache.stats TO reader;
GRANT SELECT ON local_cache.stats_global TO app WITH GRANT OPTION;
GRANT CREATE ON SCHEMA local_cache TO app;
CREATE VIEW cache_hits AS SELECT relation, hits FROM local_cache.stats;
CREATE VIEW cache_memory AS SELECT memory_used, memory_budget FROM local_cache.stats_global;
};
}

# The catalog as far as the extension and the DBA's work around it go, one line per fact.
my $catalog = q{
WITH ext AS (SELECT * FROM pg_extension WHERE extname = 'local_cache'),
members AS (SELECT d.classid, d.objid, d.objsubid FROM pg_depend d, ext
             WHERE d.refclassid = 'pg_extension'::regclass AND d.refobjid = ext.oid AND d.deptype = 'e'),
rels AS (SELECT oid FROM pg_class WHERE relnamespace IN ('local_cache'::regnamespace, 'public'::regnamespace)
                                    AND relkind IN ('r', 'v'))
SELECT 'extension ' || extversion || ' recorded in ' || extnamespace::regnamespace FROM ext
UNION ALL
SELECT 'member ' || pg_describe_object(classid, objid, objsubid) FROM members
UNION ALL
SELECT 'initial privileges of ' || pg_describe_object(i.classoid, i.objoid, i.objsubid) || ': ' || i.initprivs::text
  FROM pg_init_privs i JOIN members m ON m.classid = i.classoid AND m.objid = i.objoid
UNION ALL
SELECT 'role dependency ' || pg_describe_object(classid, objid, objsubid) || ' on ' || refobjid::regrole || ' ' || deptype::text
  FROM pg_shdepend WHERE dbid = (SELECT oid FROM pg_database WHERE datname = current_database())
UNION ALL
SELECT 'function ' || p.oid::regprocedure || ' returns ' || pg_get_function_result(p.oid)
       || ' definition ' || md5(pg_get_functiondef(p.oid)) || ' acl ' || coalesce(p.proacl::text, 'default')
  FROM pg_proc p WHERE p.pronamespace = 'local_cache'::regnamespace
UNION ALL
SELECT 'relation ' || c.oid::regclass || ' kind ' || c.relkind::text || ' acl ' || coalesce(c.relacl::text, 'default')
       || coalesce(' view ' || pg_get_viewdef(c.oid), '')
  FROM pg_class c JOIN rels USING (oid)
UNION ALL
SELECT 'column ' || a.attrelid::regclass || ' ' || a.attnum || ' ' || a.attname || ' ' || format_type(a.atttypid, a.atttypmod)
  FROM pg_attribute a JOIN rels r ON r.oid = a.attrelid WHERE a.attnum > 0 AND NOT a.attisdropped
UNION ALL
SELECT 'type ' || t.oid::regtype FROM pg_type t WHERE t.typnamespace = 'local_cache'::regnamespace
UNION ALL
SELECT 'schema local_cache acl ' || coalesce(nspacl::text, 'default') FROM pg_namespace WHERE nspname = 'local_cache'
UNION ALL
SELECT 'trigger ' || tgrelid::regclass || ' ' || tgname || ' ' || tgenabled::text || ' ' || tgfoid::regprocedure
  FROM pg_trigger WHERE NOT tgisinternal
UNION ALL
SELECT 'event trigger ' || evtname || ' ' || evtevent || ' ' || evtenabled::text || ' ' || evtfoid::regprocedure
  FROM pg_event_trigger
UNION ALL
SELECT 'server ' || srvname || ' acl ' || coalesce(srvacl::text, 'default') FROM pg_foreign_server
UNION ALL
SELECT 'registry ' || relid || ' ' || resp_prefix FROM local_cache.tables
ORDER BY 1
};

# The lines only one of two catalogs has, each marked with the side that has it.
sub catalog_difference
{
	my ($upgraded, $fresh) = @_;
	my %in_upgraded = map { $_ => 1 } split /\n/, $upgraded;
	my %in_fresh = map { $_ => 1 } split /\n/, $fresh;
	return join "\n", (map { "upgraded only: $_" } grep { !$in_fresh{$_} } sort keys %in_upgraded),
		(map { "fresh only: $_" } grep { !$in_upgraded{$_} } sort keys %in_fresh);
}

$node->safe_psql('postgres', 'CREATE DATABASE fresh');
$node->safe_psql('fresh', 'CREATE EXTENSION local_cache;' . dba_work('anycompatiblearray'));
my $fresh = $node->safe_psql('fresh', $catalog);
like($fresh, qr/^member schema local_cache$/m, "a fresh $current install: the schema is a member");

# Every version as releases before 1.4 installed it, and 1.2 as this release installs it.
for my $case ('1.0', '1.1', '1.2', '1.3', '1.2 as installed now', '1.4 as installed now')
{
	my ($version, $now) = split / /, $case, 2;
	my $db = 'from_' . ($version =~ s/\./_/r) . ($now ? '_now' : '');
	$node->safe_psql('postgres', "CREATE DATABASE $db");
	$node->safe_psql($db, "CREATE EXTENSION local_cache VERSION '$version';" . ($now ? '' : $as_before_1_4)
		. dba_work($version lt '1.3' ? 'bigint[]' : 'anycompatiblearray'));
	my ($rc, $out, $err) = $node->psql($db, 'ALTER EXTENSION local_cache UPDATE');
	is($rc, 0, "$version: ALTER EXTENSION local_cache UPDATE with grants and dependent views") or diag($err);
	is(catalog_difference($node->safe_psql($db, $catalog), $fresh), '',
		"$version -> $current: the catalog of a fresh install with the same grants");
	is($node->safe_psql($db, q{SELECT relation || ' ' || hits FROM cache_hits; SELECT memory_budget > 0 FROM cache_memory}),
		"items 0\nt", "$version -> $current: the user's views over the stats views answer");
	is($node->safe_psql($db, q{SET ROLE app; SELECT (local_cache.mget('items', '{2}'))[1]}),
		'(2,v2)', "$version -> $current: the role granted mget reads through it");
}

# The DBA's grants of an updated catalog are dumped as the DBA's (not as the extension's initial
# privileges): restored into a database that has the extension, they are all back.
my $dump = $node->basedir . '/from_1_0.dump';
$node->command_ok([ 'pg_dump', '-Fc', '-d', $node->connstr('from_1_0'), '-f', $dump ], 'pg_dump of the updated 1.0 database');
$node->safe_psql('postgres', 'CREATE DATABASE restored');
$node->safe_psql('restored', 'CREATE EXTENSION local_cache');
$node->command_ok([ 'pg_restore', '--exit-on-error', '-d', $node->connstr('restored'), $dump ],
	'pg_restore --exit-on-error into a database that has the extension');
is(catalog_difference($node->safe_psql('restored', $catalog), $fresh), '',
	'the restored database has the grants, views, triggers and registry of the updated one');

# A view that calls mget_json(regclass, bigint[]) (a signature 1.3 replaces) stops the update with
# an error naming it; once it is dropped the update runs and the same text creates it again.
$node->safe_psql('postgres', 'CREATE DATABASE blocked');
$node->safe_psql('blocked', q{
CREATE EXTENSION local_cache VERSION '1.2';
CREATE TABLE items (id bigint PRIMARY KEY, value text);
INSERT INTO items VALUES (1, 'one');
SELECT local_cache.enable('items');
CREATE VIEW first_item AS SELECT local_cache.mget_json('items', ARRAY[1]::bigint[]) AS item;
});
my ($rc, $out, $err) = $node->psql('blocked', 'ALTER EXTENSION local_cache UPDATE');
isnt($rc, 0, 'a view over mget_json(regclass, bigint[]) stops the update to 1.3');
like($err, qr/cannot update local_cache to 1\.3: view public\.first_item calls local_cache\.mget or mget_json with bigint\[\] keys/,
	'the error names the view');
like($err, qr/HINT:  Save the definitions .* drop those objects, run ALTER EXTENSION local_cache UPDATE again/,
	'the hint says what to do');
my $definition = $node->safe_psql('blocked', q{SELECT pg_get_viewdef('first_item')});
$node->safe_psql('blocked', 'DROP VIEW first_item; ALTER EXTENSION local_cache UPDATE');
$node->safe_psql('blocked', "CREATE VIEW first_item AS $definition");
is($node->safe_psql('blocked', 'SELECT item FROM first_item'), '[{"id":1,"value":"one"}]',
	'following the hint, the update runs and the view comes back');

# DROP EXTENSION takes the schema with it, after an update from a catalog before 1.4 too.
for my $db ('fresh', 'from_1_0')
{
	$node->safe_psql($db, 'DROP VIEW cache_hits, cache_memory; DROP EXTENSION local_cache CASCADE');
	is($node->safe_psql($db, q{SELECT count(*) FROM pg_namespace WHERE nspname = 'local_cache'}),
		'0', "$db: DROP EXTENSION removes the schema local_cache");
	is($node->safe_psql($db, q{SELECT count(*) FROM pg_trigger WHERE tgname LIKE 'local_cache%'}),
		'0', "$db: and the capture triggers");
}

$node->stop;
done_testing();
