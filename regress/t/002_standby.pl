# A hot standby keeps its own cache, invalidated through WAL: updates, deletes, key changes,
# TRUNCATE and DDL on the primary are never served stale on the standby, through mget, the
# foreign table or RESP, for a bigint key, a uuid key and a composite key alike; old
# REPEATABLE READ snapshots stay exact; restart and promotion keep the cache correct.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

my $primary = PostgreSQL::Test::Cluster->new('primary');
$primary->init(allows_streaming => 1);
$primary->append_conf('postgresql.conf', qq{
shared_preload_libraries = 'local_cache'
local_cache.memory = 16MB
});
$primary->start;
$primary->safe_psql('postgres', q{
CREATE EXTENSION local_cache;
CREATE EXTENSION pg_walinspect;
CREATE TABLE items (id bigint PRIMARY KEY, value text);
INSERT INTO items SELECT g, 'v' || g FROM generate_series(1, 50) g;
SELECT local_cache.enable('items');
-- key number g: md5('a' || g)::uuid here, (g / 4, g % 4 + 1) in lines
CREATE TABLE accounts (id uuid PRIMARY KEY, value text);
INSERT INTO accounts SELECT md5('a' || g)::uuid, 'a' || g FROM generate_series(1, 20) g;
SELECT local_cache.enable('accounts');
CREATE TABLE lines (order_id bigint, line_no int, value text, PRIMARY KEY (order_id, line_no));
INSERT INTO lines SELECT g / 4, g % 4 + 1, 'l' || g FROM generate_series(1, 20) g;
SELECT local_cache.enable('lines');
CREATE SCHEMA cache;
IMPORT FOREIGN SCHEMA public LIMIT TO (items, accounts, lines) FROM SERVER local_cache INTO cache;
CREATE ROLE resp_reader;
GRANT SELECT ON items, accounts, lines TO resp_reader;
});
# $uuid[g]: the uuid of key number g (its canonical text: lower case, dashes)
my @uuid = (undef, split /\n/, $primary->safe_psql('postgres',
	q{SELECT md5('a' || g)::uuid FROM generate_series(1, 32) g ORDER BY g}));
$primary->backup('base');
my $first_lsn = $primary->lsn('insert');

my $standby = PostgreSQL::Test::Cluster->new('standby');
$standby->init_from_backup($primary, 'base', has_streaming => 1);
my $resp_port = PostgreSQL::Test::Cluster::get_free_port();
$standby->append_conf('postgresql.conf', qq{
local_cache.resp_port = $resp_port
local_cache.resp_role = 'resp_reader'
local_cache.resp_workers = 1
});
$standby->start;
$primary->wait_for_catchup($standby, 'replay');

# The tables the standby is checked on, and for each: the keys mget and the foreign table read
# (present and absent ones, including the ones the writes below move rows to) as the array `k`,
# the condition that row r has the key k[u.i] and that its key is in k, the SQL of row r's RESP
# id, and the ids RESP reads.
my @checked = qw(items accounts lines);
my %checked = (
	items => {
		keys => q{ARRAY(SELECT generate_series(1, 60))::bigint[]},
		match => q{r.id = k[u.i]},
		in => q{r.id = ANY(k)},
		id => q{r.id::text},
		resp => [1, 2, 3, 4, 5, 50, 51, 99] },
	accounts => {
		keys => q{ARRAY(SELECT md5('a' || g)::uuid FROM generate_series(1, 32) g)},
		match => q{r.id = k[u.i]},
		in => q{r.id = ANY(k)},
		id => q{r.id::text},
		resp => [@uuid[1, 2, 3, 4, 5, 20, 21, 30]] },
	lines => {
		# a two-dimensional array: one row (order_id, line_no) per key
		keys => q{ARRAY(SELECT ARRAY[g / 4, g % 4 + 1] FROM generate_series(1, 32) g)::bigint[]},
		match => q{r.order_id = k[u.i][1] AND r.line_no = k[u.i][2]},
		in => q{(r.order_id, r.line_no) IN
			(SELECT k[u.i][1], k[u.i][2] FROM generate_subscripts(k, 1) u(i))},
		id => q{r.order_id || ':' || r.line_no},
		resp => ['0:2', '0:3', '0:4', '1:1', '5:1', '5:2', '7:4'] });

# On the standby: mget, the foreign table and RESP against plain SQL, in one snapshot each.
sub mget_equals_table
{
	my ($table) = @_;
	my $t = $checked{$table};
	return qq{
SELECT local_cache.mget_json('$table', k)::text = array_to_json(
         (SELECT array_agg(r ORDER BY u.i)
            FROM generate_subscripts(k, 1) u(i) LEFT JOIN $table r ON $t->{match}),
         false)::text
  FROM (SELECT $t->{keys} AS k) keys
};
}

# The rows whose key is in the list (set semantics), and a lookup of every key in list order.
sub fdw_equals_table
{
	my ($table) = @_;
	my $t = $checked{$table};
	return qq{
SELECT (SELECT array_agg(r ORDER BY r)::text FROM cache.$table r WHERE $t->{in})
       IS NOT DISTINCT FROM
       (SELECT array_agg(r ORDER BY r)::text FROM $table r WHERE $t->{in})
   AND (SELECT array_agg(r ORDER BY u.i)::text
          FROM generate_subscripts(k, 1) u(i) JOIN cache.$table r ON $t->{match})
       IS NOT DISTINCT FROM
       (SELECT array_agg(r ORDER BY u.i)::text
          FROM generate_subscripts(k, 1) u(i) JOIN $table r ON $t->{match})
  FROM (SELECT $t->{keys} AS k) keys
};
}

sub resp_values
{
	my ($table, @ids) = @_;
	my @keys = map { "$table:$_" } @ids;
	my $out = `redis-cli -p $resp_port MGET @keys 2>&1`;
	chomp $out;
	return $out;
}

sub sql_values
{
	my ($table, @ids) = @_;
	my $list = join(',', map { qq{"$_"} } @ids);
	# redis-cli prints an empty line for nil
	return $standby->safe_psql('postgres', qq{
		SELECT string_agg(coalesce(row_to_json(r)::text, ''), E'\\n' ORDER BY u.ord)
		  FROM unnest('{$list}'::text[]) WITH ORDINALITY u(id, ord)
		  LEFT JOIN $table r ON $checked{$table}{id} = u.id});
}

sub check_standby
{
	my ($label) = @_;
	for my $round ('cold', 'warm') {
		for my $table (@checked) {
			is($standby->safe_psql('postgres', mget_equals_table($table)), 't',
				"$label: $table: mget ($round)");
			is($standby->safe_psql('postgres', fdw_equals_table($table)), 't',
				"$label: $table: foreign table ($round)");
			my @ids = @{ $checked{$table}{resp} };
			is(resp_values($table, @ids), sql_values($table, @ids), "$label: $table: RESP MGET ($round)");
		}
	}
}

sub on_primary
{
	my ($sql) = @_;
	$primary->safe_psql('postgres', $sql);
	$primary->wait_for_catchup($standby, 'replay');
}

# RESP workers start once the standby is consistent.
$standby->poll_query_until('postgres', q{SELECT count(*) > 0 FROM pg_stat_activity
	WHERE backend_type = 'local_cache RESP worker'}) or die 'no RESP worker on the standby';
for (1 .. 100) { last if `redis-cli -p $resp_port PING 2>&1` =~ /PONG/; select(undef, undef, undef, 0.1); }

check_standby('initial');
# INFO replication tells redis-cli and exporters that this is a replica, and of which server.
# Where the primary is, only to members of pg_read_all_stats (as pg_stat_wal_receiver shows it).
my $replication = `redis-cli -p $resp_port INFO replication 2>&1`;
like($replication, qr/^role:slave\r?$/m, 'INFO on the standby: role:slave');
unlike($replication, qr/^master_(host|port):/m, 'INFO on the standby: no primary address for a role outside pg_read_all_stats');
like($replication, qr/^master_link_status:up\r?$/m, 'INFO on the standby: master_link_status:up while streaming');
on_primary('GRANT pg_read_all_stats TO resp_reader');
$replication = `redis-cli -p $resp_port INFO replication 2>&1`;
like($replication, qr/^master_port:${\ $primary->port}\r?$/m, 'INFO on the standby: master_port is the primary, for pg_read_all_stats');
like($replication, qr/^master_host:\S+\r?$/m, 'INFO on the standby: master_host, for pg_read_all_stats');
on_primary('REVOKE pg_read_all_stats FROM resp_reader');
# Writes on a standby: Redis's READONLY error, for every write command.
for my $write ("SET items:1 {}", "DEL items:1", "HSET items:1 value x", "HINCRBY items:1 id 1", "MSET items:1 {}")
{
	like(`redis-cli -p $resp_port $write 2>&1`, qr/^READONLY You can't write against a read only replica\.$/m,
		"standby: $write answers READONLY");
}
for my $table (@checked)
{
	cmp_ok($standby->safe_psql('postgres',
			"SELECT hits FROM local_cache.stats WHERE relation = '$table'::regclass"),
		'>', 0, "the standby serves hits of $table from its own cache");
}

on_primary(q{UPDATE items SET value = 'updated' WHERE id = 1});
check_standby('after UPDATE');
on_primary(q{DELETE FROM items WHERE id = 2});
check_standby('after DELETE');
on_primary(q{INSERT INTO items VALUES (51, 'inserted'), (2, 'back')});
check_standby('after INSERT');
on_primary(q{UPDATE items SET id = 99 WHERE id = 3});
check_standby('after UPDATE of the key');
on_primary(q{BEGIN; UPDATE items SET value = 'rolled back' WHERE id = 4; ROLLBACK});
check_standby('after ROLLBACK');

# The same for a uuid key and a composite key, whose invalidations reach the standby as key
# bytes: every check above has cached the old and new keys (absent ones too) on the standby.
on_primary(qq{UPDATE accounts SET value = 'updated' WHERE id = '$uuid[1]';
	UPDATE lines SET value = 'updated' WHERE order_id = 0 AND line_no = 2});
check_standby('uuid and composite keys: after UPDATE');
is($standby->safe_psql('postgres', qq{SELECT local_cache.mget_json('accounts', '{$uuid[1]}')}),
	qq{[{"id":"$uuid[1]","value":"updated"}]}, 'uuid key: the standby reads the update');
is($standby->safe_psql('postgres', q{SELECT local_cache.mget_json('lines', '{{0,2}}'::int[])}),
	'[{"order_id":0,"line_no":2,"value":"updated"}]', 'composite key: the standby reads the update');
on_primary(qq{DELETE FROM accounts WHERE id = '$uuid[2]';
	DELETE FROM lines WHERE order_id = 0 AND line_no = 3});
check_standby('uuid and composite keys: after DELETE');
on_primary(qq{INSERT INTO accounts VALUES ('$uuid[21]', 'inserted'), ('$uuid[2]', 'back');
	INSERT INTO lines VALUES (5, 2, 'inserted'), (0, 3, 'back')});
check_standby('uuid and composite keys: after INSERT');
# the new keys $uuid[30] and (7, 4) were absent (and cached as such) until now
on_primary(qq{UPDATE accounts SET id = '$uuid[30]' WHERE id = '$uuid[3]';
	UPDATE lines SET order_id = 7 WHERE order_id = 0 AND line_no = 4});
check_standby('uuid and composite keys: after UPDATE of the key');
is($standby->safe_psql('postgres',
		qq{SELECT local_cache.mget_json('accounts', '{$uuid[3],$uuid[30]}')}),
	qq{[null,{"id":"$uuid[30]","value":"a3"}]},
	'uuid key moved: the standby reads the old key absent, the new present');
is(resp_values('lines', '0:4', '7:4'), qq{\n{"order_id":7,"line_no":4,"value":"l3"}},
	'composite key moved: RESP on the standby reads the old key nil, the new present');
# Long text keys: one transaction's invalidations of 600 keys of 2 kB are more than a megabyte
# of key bytes, so they reach WAL as several INVALIDATE records; the standby replays them all.
on_primary(q{CREATE TABLE notes (id text PRIMARY KEY, value text);
	INSERT INTO notes SELECT repeat(md5(g::text), 64) || g, 'n' || g FROM generate_series(1, 600) g;
	SELECT local_cache.enable('notes')});
my $notes_equal = q{
SELECT local_cache.mget_json('notes', k)::text = array_to_json(
         (SELECT array_agg(n ORDER BY u.i) FROM generate_subscripts(k, 1) u(i) LEFT JOIN notes n ON n.id = k[u.i]),
         false)::text
  FROM (SELECT array_agg(repeat(md5(g::text), 64) || g ORDER BY g) AS k FROM generate_series(1, 600) g) s};
is($standby->safe_psql('postgres', $notes_equal), 't', 'long text keys: the standby reads them (cold)');
my $notes_hits = standby_counter('hits');
is($standby->safe_psql('postgres', $notes_equal), 't', 'long text keys: the standby reads them (warm)');
cmp_ok(standby_counter('hits') - $notes_hits, '>=', 600, 'long text keys: ... from its cache');
my $notes_lsn = $primary->lsn('insert');
# (With a condition: an UPDATE with none writes every row and flushes the table instead, below.)
on_primary(q{UPDATE notes SET value = 'u' || value WHERE value LIKE 'n%'});
like(wal_records_since($notes_lsn), qr/^INVALIDATE(,INVALIDATE)+$/,
	'long text keys: one UPDATE of them all writes several INVALIDATE records');
is($standby->safe_psql('postgres', $notes_equal), 't', 'long text keys: the standby reads every update');
is($standby->safe_psql('postgres', q{SELECT count(*) FROM notes WHERE value LIKE 'un%'}), '600',
	'long text keys: ... which SQL on the standby shows too');
is($standby->safe_psql('postgres', $notes_equal), 't', 'long text keys: the standby reads them again (warm)');
$notes_lsn = $primary->lsn('insert');
on_primary(q{UPDATE notes SET value = 'w' || value});
is(wal_records_since($notes_lsn), 'INVALIDATE',
	'an UPDATE with no condition: one INVALIDATE record, the table flushed, no keys');
is($standby->safe_psql('postgres', $notes_equal), 't', '... and the standby reads every update');
is($standby->safe_psql('postgres', q{SELECT count(*) FROM notes WHERE value LIKE 'wun%'}), '600',
	'... which SQL on the standby shows too');
on_primary(q{DROP TABLE notes});

on_primary(q{TRUNCATE items; INSERT INTO items SELECT g, 'w' || g FROM generate_series(1, 50) g});
check_standby('after TRUNCATE');
on_primary(q{ALTER TABLE items RENAME COLUMN value TO val});
is($standby->safe_psql('postgres', q{SELECT local_cache.mget_json('items', '{5}')}),
	'[{"id":5,"val":"w5"}]', 'after RENAME COLUMN: rows of the new shape');
on_primary(q{ALTER TABLE items RENAME COLUMN val TO value});
check_standby('after RENAME back');

# An old REPEATABLE READ snapshot on the standby keeps seeing the old row, while another
# session caches the new one.
my $old_reader = $standby->background_psql('postgres');
$old_reader->query_safe(q{BEGIN ISOLATION LEVEL REPEATABLE READ});
is($old_reader->query_safe(q{SELECT local_cache.mget_json('items', '{6}')}),
	'[{"id":6,"value":"w6"}]', 'old snapshot: before the update');
on_primary(q{UPDATE items SET value = 'newer' WHERE id = 6});
is($standby->safe_psql('postgres', q{SELECT local_cache.mget_json('items', '{6}')}),
	'[{"id":6,"value":"newer"}]', 'a new snapshot sees the update (and caches it)');
is($old_reader->query_safe(q{SELECT local_cache.mget_json('items', '{6}')}),
	'[{"id":6,"value":"w6"}]', 'old snapshot: still the old row');
is($old_reader->query_safe(mget_equals_table('items')), 't', 'old snapshot: mget equals its own SQL');
$old_reader->query_safe('COMMIT');
$old_reader->quit;

# The primary's WAL carries the invalidations under the extension's resource manager.
cmp_ok($primary->safe_psql('postgres', qq{
	SELECT count(*) FROM pg_get_wal_records_info('$first_lsn', pg_current_wal_lsn())
	 WHERE resource_manager = 'local_cache' AND record_type = 'INVALIDATE'}),
	'>', 0, 'WAL records named local_cache/INVALIDATE');

# Any window in which the primary's writes are not captured ends with a flush that reaches
# the standby: disable(), a write, enable(); a capture trigger disabled around a write (the
# standby must not serve rows it cached before, nor fill from the uncaptured writes).
check_standby('before disable() and enable()');
on_primary(q{SELECT local_cache.disable('items')});
on_primary(q{UPDATE items SET value = 'written while disabled' WHERE id = 12});
on_primary(q{SELECT local_cache.enable('items')});
check_standby('after disable(), UPDATE, enable()');
on_primary(q{ALTER TABLE items DISABLE TRIGGER local_cache_invalidate});
on_primary(q{UPDATE items SET value = 'written while capture was off' WHERE id = 13});
check_standby('capture trigger disabled, then UPDATE');
on_primary(q{UPDATE items SET value = 'written while capture was still off' WHERE id = 13});
check_standby('capture trigger disabled, another UPDATE');
on_primary(q{ALTER TABLE items ENABLE ALWAYS TRIGGER local_cache_invalidate});
check_standby('capture trigger enabled again');
on_primary(q{UPDATE items SET value = 'captured again' WHERE id = 13});
check_standby('capture trigger enabled again, then UPDATE');

# local_cache.wal_invalidations = off on the primary: its writes are not invalidated through
# WAL, so the standby stops serving cached rows and reads its tables (STOP record, written
# before the first such write commits); turned on again, the standby flushes and serves from
# its cache again (START record).
sub wal_records_since
{
	my ($lsn) = @_;
	return $primary->safe_psql('postgres', qq{
		SELECT string_agg(record_type, ',' ORDER BY start_lsn)
		  FROM pg_get_wal_records_info('$lsn', pg_current_wal_lsn()) WHERE resource_manager = 'local_cache'});
}
sub standby_counter
{
	my ($name) = @_;
	return $standby->safe_psql('postgres', "SELECT $name FROM local_cache.stats_global");
}
sub set_wal_invalidations
{
	my ($value) = @_;
	$primary->safe_psql('postgres', "ALTER SYSTEM SET local_cache.wal_invalidations = $value");
	$primary->reload;
	$primary->poll_query_until('postgres', "SELECT current_setting('local_cache.wal_invalidations') = '$value'")
	  or die "local_cache.wal_invalidations did not become $value";
}
my $switch_lsn = $primary->lsn('insert');
set_wal_invalidations('off');
check_standby('setting off, nothing written yet');
cmp_ok(standby_counter('entries'), '>', 0, 'setting off, nothing written yet: the standby still caches');
on_primary(q{UPDATE items SET value = 'not logged' WHERE id = 9});
is(standby_counter('entries'), '0', 'setting off: the first write flushed the standby\'s cache');
my $hits = standby_counter('hits');
check_standby('setting off: after UPDATE');
on_primary(q{UPDATE items SET value = 'not logged either' WHERE id = 10; DELETE FROM items WHERE id = 11});
check_standby('setting off: after more writes');
is(standby_counter('hits'), $hits, 'setting off: the standby reads its tables, no hits');
is(standby_counter('entries'), '0', 'setting off: and fills nothing');
is(wal_records_since($switch_lsn), 'STOP', 'setting off: one STOP record, no INVALIDATE');
set_wal_invalidations('on');
on_primary(q{UPDATE items SET value = 'logged again' WHERE id = 9});
check_standby('setting on again');
cmp_ok(standby_counter('hits'), '>', $hits, 'setting on again: the standby serves from its cache');
is(wal_records_since($switch_lsn), 'STOP,START,INVALIDATE', 'setting on again: START, then INVALIDATE records');

# A restarted standby starts with an empty cache and stays correct.
$standby->restart;
is($standby->safe_psql('postgres', 'SELECT entries FROM local_cache.stats_global'), '0',
	'after restart: empty cache');
for (1 .. 100) { last if `redis-cli -p $resp_port PING 2>&1` =~ /PONG/; select(undef, undef, undef, 0.1); }
check_standby('after standby restart');
on_primary(q{UPDATE items SET value = 'after restart' WHERE id = 7});
check_standby('after restart and UPDATE');

# Promotion: the former standby's cache follows its own writes from then on.
$standby->promote;
$standby->poll_query_until('postgres', 'SELECT NOT pg_is_in_recovery()') or die 'promotion failed';
$standby->safe_psql('postgres', q{UPDATE items SET value = 'written after promotion' WHERE id = 8});
is($standby->safe_psql('postgres', q{SELECT local_cache.mget_json('items', '{8}')}),
	'[{"id":8,"value":"written after promotion"}]', 'after promotion: own writes invalidate');
check_standby('after promotion');
like(`redis-cli -p $resp_port INFO replication 2>&1`, qr/^role:master\r?$/m, 'INFO after promotion: role:master');

$standby->stop;
$primary->stop;
done_testing();
