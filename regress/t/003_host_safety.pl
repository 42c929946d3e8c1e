# The extension never harms the server it lives in: routine DBA work around it keeps working.
#
#  - the RESP server waits quietly for a missing database, and for a dropped extension, and
#    resumes when they are back, without a restart;
#  - DROP DATABASE completes while the RESP workers are idle (they absorb its barrier);
#  - a RESP request on a locked table waits at most local_cache.resp_lock_timeout, answers
#    -BUSY naming the table, and other connections are served meanwhile; a fast shutdown
#    completes while such a request waits;
#  - with local_cache.wal_invalidations off and a CHECKPOINT, a crashed server restarts
#    without the library (no local_cache WAL record to replay);
#  - without shared_preload_libraries every entry point raises a clean ERROR naming the
#    setting (never FATAL), and unrelated DDL works.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(time usleep);

my $resp_port = PostgreSQL::Test::Cluster::get_free_port();
my $node = PostgreSQL::Test::Cluster->new('main');
$node->init;
$node->append_conf('postgresql.conf', qq{
shared_preload_libraries = 'local_cache'
local_cache.memory = 16MB
wal_level = replica
max_wal_senders = 2
max_prepared_transactions = 5
local_cache.resp_port = $resp_port
local_cache.resp_workers = 1
local_cache.resp_role = 'resp_reader'
local_cache.resp_database = 'cachedb'
local_cache.resp_lock_timeout = '2s'
});
$node->start;

sub resp
{
	my $out = `timeout 30 redis-cli -p $resp_port @_ 2>&1`;
	$out =~ s/\s+$//;
	return $out;
}

sub wait_for_resp
{
	my ($args, $want, $what) = @_;
	my $got = '';
	for (1 .. 300) {
		$got = resp($args);
		return pass($what) if $got eq $want;
		usleep(100_000);
	}
	is($got, $want, $what);
}

sub log_count
{
	my ($pattern) = @_;
	my $log = slurp_file($node->logfile);
	my @lines = ($log =~ /$pattern/g);
	return scalar @lines;
}

my $setup = q{
CREATE EXTENSION local_cache;
CREATE TABLE items (id bigint PRIMARY KEY, value text);
INSERT INTO items SELECT g, 'v' || g FROM generate_series(1, 10) g;
SELECT local_cache.enable('items');
GRANT SELECT ON items TO resp_reader;
};
$node->safe_psql('postgres', 'CREATE ROLE resp_reader');

# ---- the RESP database does not exist yet: the launcher waits, quietly
sleep(3);
is(log_count(qr/database "cachedb" does not exist or does not allow connections; waiting/), 1,
	'missing RESP database: one log line, however long it waits');
is(log_count(qr/FATAL/), 0, 'missing RESP database: no worker fails');
$node->safe_psql('postgres', 'CREATE DATABASE cachedb');
$node->safe_psql('cachedb', $setup);
wait_for_resp('GET items:1', '{"id":1,"value":"v1"}', 'the database appears: RESP serves it, no restart');

# ---- DROP DATABASE while the RESP worker is idle: it absorbs the ProcSignalBarrier
$node->safe_psql('postgres', 'CREATE DATABASE victim');
my ($timed_out, $stderr);
my $ret = $node->psql('postgres', 'DROP DATABASE victim', timeout => 60, timed_out => \$timed_out,
	stderr => \$stderr);
ok(!$timed_out && $ret == 0, 'DROP DATABASE completes while the RESP worker is idle');
is(resp('PING'), 'PONG', 'the worker serves after the barrier');

# ---- a table locked by another transaction: bounded wait, -BUSY, others served
$node->safe_psql('cachedb', q{BEGIN; LOCK TABLE items IN ACCESS EXCLUSIVE MODE; PREPARE TRANSACTION 'holds_items'});
my ($get_out, $get_err) = ('', '');
my $started = time();
my $get = IPC::Run::start([ 'redis-cli', '-p', $resp_port, 'GET', 'items:1' ], '>', \$get_out, '2>', \$get_err);
usleep(200_000);
my $ping_started = time();
is(resp('PING'), 'PONG', 'a request waits for a locked table: other connections are served');
cmp_ok(time() - $ping_started, '<', 1, '... at once');
$get->finish;
my $waited = time() - $started;
like($get_out, qr/^BUSY table "items" is locked by another transaction/, 'the waiting request answers -BUSY naming the table');
cmp_ok($waited, '>=', 1.5, '... after local_cache.resp_lock_timeout');
cmp_ok($waited, '<', 10, '... not much later');

# A fast shutdown while a request waits for the lock.
$get = IPC::Run::start([ 'redis-cli', '-p', $resp_port, 'GET', 'items:2' ], '>', \$get_out, '2>', \$get_err);
usleep(300_000);
$started = time();
my $stopped = PostgreSQL::Test::Utils::system_log('pg_ctl', '-D', $node->data_dir, '-m', 'fast', '-t', '60', 'stop') == 0;
ok($stopped, 'fast shutdown completes while a RESP request waits for a lock');
cmp_ok(time() - $started, '<', 20, '... promptly');
$get->finish;
$node->_update_pid(0) if $stopped;
$node->start;
$node->safe_psql('cachedb', q{COMMIT PREPARED 'holds_items'});
wait_for_resp('GET items:2', '{"id":2,"value":"v2"}', 'after the restart, with the lock gone: served');

# ---- the extension is dropped in the RESP database, then created again
$node->safe_psql('cachedb', 'DROP EXTENSION local_cache CASCADE');
is(resp('GET items:1'), 'ERR extension local_cache is not installed in database "cachedb"',
	'extension dropped: a clear error');
is(resp('GET items:1'), 'ERR extension local_cache is not installed in database "cachedb"', '... every time');
is(log_count(qr/extension local_cache is not installed in database "cachedb"; data commands fail/), 1,
	'extension dropped: one log line');
$node->safe_psql('cachedb', q{CREATE EXTENSION local_cache; SELECT local_cache.enable('items')});
is(resp('GET items:3'), '{"id":3,"value":"v3"}', 'extension created again: served at once');

# ---- the RESP database is dropped (FORCE ends the workers) and created again
my $waiting_before = log_count(qr/database "cachedb" does not exist or does not allow connections; waiting/);
$node->safe_psql('postgres', 'DROP DATABASE cachedb WITH (FORCE)');
sleep(3);
is(log_count(qr/database "cachedb" does not exist or does not allow connections; waiting/), $waiting_before + 1,
	'RESP database dropped: the launcher waits, with one log line');
$node->safe_psql('postgres', 'CREATE DATABASE cachedb');
$node->safe_psql('cachedb', $setup);
wait_for_resp('GET items:4', '{"id":4,"value":"v4"}', 'RESP database created again: served, no restart');
unlike(slurp_file($node->logfile), qr/terminated by signal|server process .* was terminated/,
	'no process crashed');

# ---- local_cache.wal_invalidations = off, CHECKPOINT: the library can go after a crash
my $lsn_before = $node->safe_psql('cachedb', 'SELECT pg_current_wal_insert_lsn()');
$node->safe_psql('cachedb', q{UPDATE items SET value = 'logged' WHERE id = 5});
$node->safe_psql('postgres', q{ALTER SYSTEM SET local_cache.wal_invalidations = off});
$node->reload;
$node->poll_query_until('cachedb', q{SELECT current_setting('local_cache.wal_invalidations') = 'off'})
  or die 'the setting did not change';
$node->safe_psql('cachedb', 'CHECKPOINT');
my $checkpoint_lsn = $node->safe_psql('cachedb', 'SELECT redo_lsn FROM pg_control_checkpoint()');
$node->safe_psql('cachedb', q{UPDATE items SET value = 'not logged' WHERE id = 5});
is($node->safe_psql('cachedb', q{SELECT local_cache.mget_json('items', '{5}')}),
	'[{"id":5,"value":"not logged"}]', 'setting off: the server\'s own cache still follows writes');
$node->safe_psql('cachedb', 'CREATE EXTENSION pg_walinspect');
like($node->safe_psql('cachedb', qq{
	SELECT string_agg(record_type, ',' ORDER BY start_lsn) FROM pg_get_wal_records_info('$lsn_before', pg_current_wal_lsn())
	 WHERE resource_manager = 'local_cache'}),
	qr/^(START,)?INVALIDATE,STOP$/, 'WAL: the logged update, then STOP before the checkpoint, then nothing');
is($node->safe_psql('cachedb', qq{
	SELECT count(*) FROM pg_get_wal_records_info('$checkpoint_lsn', pg_current_wal_lsn())
	 WHERE resource_manager = 'local_cache'}),
	'0', 'no local_cache record after the checkpoint');
$node->safe_psql('postgres', 'CREATE DATABASE nothing_cached');
$node->safe_psql('nothing_cached', 'CREATE EXTENSION local_cache');
$node->stop('immediate');
$node->adjust_conf('postgresql.conf', 'shared_preload_libraries', "''");
$node->adjust_conf('postgresql.conf', 'local_cache.resp_port', '0');
ok($node->start(fail_ok => 1), 'crash recovery without the library');
is($node->safe_psql('cachedb', q{SELECT value FROM items WHERE id = 5}), 'not logged', '... with every committed row');

# ---- without shared_preload_libraries: clean ERRORs, never FATAL
my $log_offset = -s $node->logfile;
my $session = $node->background_psql('cachedb', on_error_stop => 0);
sub error_of
{
	my ($sql) = @_;
	$session->{stderr} = '';
	$session->query($sql);
	my $err = $session->{stderr};
	$session->{stderr} = '';
	return $err;
}
my $preload_error = qr/ERROR:  local_cache must be loaded via shared_preload_libraries\nHINT:  Add local_cache to shared_preload_libraries/;
is(error_of(q{LOAD 'local_cache'}), '', 'LOAD works');
like(error_of(q{SELECT local_cache.mget('items', '{1}')}), $preload_error, 'mget: ERROR naming the setting');
like(error_of(q{SELECT local_cache.mget_json('items', '{1}')}), $preload_error, 'mget_json: the same');
like(error_of(q{UPDATE items SET value = 'x' WHERE id = 1}), $preload_error, 'a write to a cached table: the same');
like(error_of(q{SELECT * FROM local_cache.stats}), $preload_error, 'stats: the same');
like(error_of(q{SELECT * FROM local_cache.stats_global}), $preload_error, 'stats_global: the same');
my (undef, undef, $stats_err) = $node->psql('nothing_cached', 'SELECT * FROM local_cache.stats');
like($stats_err, $preload_error, 'stats where no table is cached: the same (not an empty answer)');
is(error_of(q{CREATE SCHEMA cache; IMPORT FOREIGN SCHEMA public LIMIT TO (items) FROM SERVER local_cache INTO cache}),
	'', 'IMPORT FOREIGN SCHEMA works');
like(error_of(q{SELECT * FROM cache.items WHERE id = 1}), $preload_error, 'the foreign table: the same');
like(error_of(q{ALTER TABLE items ADD COLUMN extra text}), $preload_error, 'ALTER TABLE of a cached table: the same');
is(error_of(q{CREATE TABLE unrelated (id int PRIMARY KEY); ALTER TABLE unrelated ADD COLUMN v text}), '',
	'ALTER TABLE of another table works');
like(error_of(q{SELECT local_cache.enable('unrelated')}), $preload_error, 'enable(): the same');
is(error_of(q{SELECT local_cache.disable('items')}), '', 'disable() works');
is($session->query_safe('SELECT 1'), '1', 'the session is still alive');
$session->quit;
$node->safe_psql('postgres', 'CREATE DATABASE fresh');
$node->psql('fresh', 'CREATE EXTENSION local_cache', stderr => \$stderr);
is($stderr, '', 'CREATE EXTENSION works');
unlike(slurp_file($node->logfile, $log_offset), qr/FATAL|PGC_POSTMASTER/, 'no FATAL anywhere');

$node->stop;
done_testing();
