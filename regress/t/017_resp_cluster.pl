# A primary and two hot standbys with local_cache.resp_cluster on answer as one Redis Cluster
# shard: every node's CLUSTER SLOTS, SHARDS, NODES, MYID, INFO and ROLE name the primary (its RESP
# port) and both standbys (on the primary from application_name, on a standby from
# local_cache.cluster_members, which the primary publishes); node ids are distinct, agree between
# nodes and survive a restart; a standby answers -MOVED to the primary for writes and for reads
# before READONLY, and serves reads after READONLY; `redis-cli -c` follows MOVED from a standby;
# redis-py's RedisCluster (read_from_replicas=True, cluster_redis_py.py) started from one standby
# writes on the primary and reads on both standbys (INFO commandstats of each node). WAIT counts
# the standbys that replayed the connection's write (a paused standby is not counted), keeps its
# timeout, covers a write committed with synchronous_commit = off, and without a write counts
# every standby that replayed all WAL so far (as Redis counts every replica); with the default
# wal_receiver_status_interval (10 s) WAIT 2 3000 after a write returns 2 even from a standby whose
# replay waits (recovery_min_apply_delay): a standby reports its replay once it replayed all it
# received. A standby whose replay is paused is flagged lag on every node, and no longer once it
# caught up; a stopped standby is marked failed on the primary and on the other standby; a
# promoted standby answers as the primary (ROLE, CLUSTER NODES, writes).
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use File::Basename qw(dirname);
use Time::HiRes qw(gettimeofday tv_interval);

my $primary = PostgreSQL::Test::Cluster->new('primary');
$primary->init(allows_streaming => 1);
my $primary_resp = PostgreSQL::Test::Cluster::get_free_port();
$primary->append_conf('postgresql.conf', qq{
shared_preload_libraries = 'local_cache'
local_cache.memory = 16MB
local_cache.resp_port = $primary_resp
local_cache.resp_workers = 1
local_cache.resp_role = 'resp_user'
local_cache.resp_cluster = on
});
$primary->start;
$primary->safe_psql('postgres', q{
CREATE EXTENSION local_cache;
CREATE TABLE items (id bigint PRIMARY KEY, value text);
INSERT INTO items SELECT g, 'v' || g FROM generate_series(1, 20) g;
SELECT local_cache.enable('items');
CREATE ROLE resp_user;
GRANT SELECT, INSERT, UPDATE, DELETE ON items TO resp_user;
});
$primary->backup('base');

my (%resp, @standbys);
for my $name ('standby1', 'standby2') {
	my $standby = PostgreSQL::Test::Cluster->new($name);
	$standby->init_from_backup($primary, 'base', has_streaming => 1);
	my $port = PostgreSQL::Test::Cluster::get_free_port();
	$resp{$name} = $port;
	# The standby tells the primary its RESP endpoint in its application_name.
	my $conninfo = $primary->connstr . " application_name=127.0.0.1:$port";
	$standby->append_conf('postgresql.conf', qq{
local_cache.resp_port = $port
local_cache.resp_cluster_primary = '127.0.0.1:$primary_resp'
primary_conninfo = '$conninfo'
});
	$standby->start;
	push @standbys, $standby;
}
# (wait_for_catchup looks for the node's name as application_name: the endpoint is there instead)
$primary->poll_query_until('postgres', q{SELECT count(*) = 2 FROM pg_stat_replication
	WHERE state = 'streaming' AND replay_lsn >= pg_current_wal_lsn()}) or die 'standbys not caught up';

sub redis
{
	my ($port, $args) = @_;
	my $out = `redis-cli -p $port $args 2>&1`;
	$out =~ s/\r//g;
	return $out;
}

sub wait_for_resp
{
	my ($port) = @_;
	for (1 .. 200) { return if redis($port, 'PING') =~ /PONG/; select(undef, undef, undef, 0.1); }
	die "no RESP server on port $port";
}
wait_for_resp($_) for ($primary_resp, values %resp);

# ---- topology on every node ----

my %ids;
for my $node (['primary', $primary_resp], map { [$_, $resp{$_}] } sort keys %resp) {
	my ($name, $port) = @$node;
	my $id = redis($port, 'CLUSTER MYID');
	chomp $id;
	like($id, qr/^[0-9a-f]{40}$/, "$name: CLUSTER MYID is 40 hex digits");
	$ids{$name} = $id;
	my $slots = redis($port, 'CLUSTER SLOTS');
	like($slots, qr/\A0\n16383\n127\.0\.0\.1\n$primary_resp\n/, "$name: CLUSTER SLOTS, all slots, the primary first");
	like(redis($port, 'CLUSTER INFO'), qr/^cluster_state:ok$/m, "$name: CLUSTER INFO cluster_state:ok");
	like(redis($port, 'CLUSTER SHARDS'), qr/^master$/m, "$name: CLUSTER SHARDS names the master");
}
isnt($ids{standby1}, $ids{standby2}, 'the standbys have distinct ids');
isnt($ids{primary}, $ids{standby1}, 'the primary and a standby have distinct ids');

# The primary knows both standbys, by the endpoints they announced.
$primary->poll_query_until('postgres', q{SELECT count(*) = 2 FROM pg_stat_replication WHERE state = 'streaming'})
	or die 'standbys not streaming';
my $nodes = redis($primary_resp, 'CLUSTER NODES');
like($nodes, qr/^$ids{primary} 127\.0\.0\.1:$primary_resp\@0 myself,master - .* connected 0-16383$/m,
	'primary: CLUSTER NODES, itself as master');
like($nodes, qr/^$ids{$_} 127\.0\.0\.1:$resp{$_}\@0 slave $ids{primary} .* connected$/m,
	"primary: CLUSTER NODES lists $_ with the id it gives itself") for sort keys %resp;
my $slots = redis($primary_resp, 'CLUSTER SLOTS');
like($slots, qr/^$resp{$_}$/m, "primary: CLUSTER SLOTS lists $_") for sort keys %resp;
like(redis($resp{standby1}, 'CLUSTER NODES'), qr/^$ids{primary} 127\.0\.0\.1:$primary_resp\@0 master - /m,
	'standby: CLUSTER NODES names the primary with the id the primary gives itself');
like(redis($primary_resp, 'ROLE'), qr/\Amaster\n\d+\n127\.0\.0\.1\n\d+\n\d+\n/, 'primary: ROLE master with standbys');
like(redis($resp{standby1}, 'ROLE'), qr/\Aslave\n127\.0\.0\.1\n$primary_resp\nconnected\n\d+/,
	'standby: ROLE slave of the primary');
like(redis($primary_resp, 'INFO replication'), qr/^connected_slaves:2$/m, 'primary: INFO connected_slaves:2');
like(redis($resp{standby1}, 'INFO replication'), qr/^master_port:$primary_resp$/m,
	'standby: INFO master_port is the primary RESP port');
like(redis($primary_resp, 'CLUSTER KEYSLOT foo'), qr/^12182$/m, 'CLUSTER KEYSLOT foo');

# ---- routing ----

my $slot = redis($primary_resp, 'CLUSTER KEYSLOT items:1');
chomp $slot;
like(redis($resp{standby1}, q{SET items:1 '{"id":1,"value":"x"}'}), qr/^MOVED $slot 127\.0\.0\.1:$primary_resp$/m,
	'standby: a write answers MOVED to the primary');
like(redis($resp{standby1}, 'HSET items:1 value x'), qr/^MOVED $slot /m, 'standby: HSET answers MOVED');
like(redis($resp{standby1}, 'GET items:1'), qr/^MOVED $slot 127\.0\.0\.1:$primary_resp$/m,
	'standby: a read before READONLY answers MOVED');
my $read = `printf 'READONLY\\nGET items:1\\nMGET items:2 items:3\\n' | redis-cli -p $resp{standby1} 2>&1`;
like($read, qr/^OK\n\{"id":1,"value":"v1"\}\n\{"id":2,"value":"v2"\}\n\{"id":3,"value":"v3"\}/m,
	'standby: reads served after READONLY');
like(`redis-cli -c -p $resp{standby2} SET items:5 '{"id":5,"value":"via-cluster"}' 2>&1`, qr/^OK$/m,
	'redis-cli -c follows MOVED from a standby to the primary');
is($primary->safe_psql('postgres', 'SELECT value FROM items WHERE id = 5'), 'via-cluster', 'the write landed on the primary');
like(`redis-cli -c -p $resp{standby1} GET items:5 2>&1`, qr/via-cluster/,
	'redis-cli -c: a read sent to a standby without READONLY follows MOVED to the primary');
like(redis($primary_resp, 'GET items:5'), qr/via-cluster/, 'the primary reads it (no MOVED there)');

# ---- every node lists the whole group ----

sub poll_like
{
	my ($port, $command, $pattern) = @_;
	my $out;
	for (1 .. 100) {
		$out = redis($port, $command);
		return $out if $out =~ $pattern;
		select(undef, undef, undef, 0.1);
	}
	return $out;
}
for my $name (sort keys %resp) {
	my $other = $name eq 'standby1' ? 'standby2' : 'standby1';
	like(poll_like($resp{$name}, 'CLUSTER SLOTS', qr/^$resp{$other}$/m), qr/^$resp{$other}$/m,
		"$name: CLUSTER SLOTS lists its sibling $other");
	like(redis($resp{$name}, 'CLUSTER NODES'),
		qr/^$ids{$other} 127\.0\.0\.1:$resp{$other}\@0 slave $ids{primary} .* connected$/m,
		"$name: CLUSTER NODES lists $other as a replica of the primary, with its id");
	like(redis($resp{$name}, 'CLUSTER INFO'), qr/^cluster_known_nodes:3$/m, "$name: CLUSTER INFO knows 3 nodes");
}

# ---- redis-py's RedisCluster: writes on the primary, reads spread over both standbys ----

sub calls
{
	my ($port, $command) = @_;
	return redis($port, 'INFO commandstats') =~ /^cmdstat_$command:calls=(\d+)/m ? $1 : 0;
}
my @ports = ($primary_resp, $resp{standby1}, $resp{standby2});
my @gets_before = map { calls($_, 'get') } @ports;
my @sets_before = map { calls($_, 'set') } @ports;
my @read_keys = map { 'items:' . (1 + $_ % 20) } 1 .. 30;
my $script = dirname(__FILE__) . '/cluster_redis_py.py';
my $py = `/usr/bin/python3 $script 127.0.0.1 $resp{standby1} items:7 '{"id":7,"value":"py"}' @read_keys 2>&1`;
like($py, qr/^node 127\.0\.0\.1:$resp{standby2} replica$/m, 'redis-py started from standby1 knows standby2');
like($py, qr/^OK True$/m, 'redis-py: the write answered') or diag($py);
is($primary->safe_psql('postgres', 'SELECT value FROM items WHERE id = 7'), 'py', 'redis-py: the write is in the table');
# The calls per node since @before, once they add up to $total: a worker's counts reach the shared
# statistics within 10 ms of its last request (Worker::kStatsFoldDelayMs).
sub counted_since
{
	my ($command, $total, @before) = @_;
	my @counted;
	for (1 .. 100) {
		@counted = map { calls($ports[$_], $command) - $before[$_] } 0 .. 2;
		my $sum = 0;
		$sum += $_ for @counted;
		last if $sum >= $total;
		select(undef, undef, undef, 0.02);
	}
	return @counted;
}
my @gets = counted_since('get', 30, @gets_before);
my @sets = counted_since('set', 1, @sets_before);
note("redis-py: GET per node (primary, standby1, standby2): @gets; SET: @sets");
is($sets[0], 1, 'redis-py: the write ran on the primary');
is($sets[1] + $sets[2], 0, 'redis-py: no write ran on a standby');
cmp_ok($gets[1], '>', 0, 'redis-py: standby1 served reads');
cmp_ok($gets[2], '>', 0, 'redis-py: standby2 served reads');
is($gets[0] + $gets[1] + $gets[2], 30, 'redis-py: 30 reads, each served once');

# ---- WAIT ----

like(redis($primary_resp, 'WAIT 2 0'), qr/^2$/m,
	'WAIT without a write on the connection: both standbys, which replayed everything');
$standbys[0]->safe_psql('postgres', 'SELECT pg_wal_replay_pause()');
my $started = [gettimeofday];
my $partial = `printf 'HSET items:8 value paused\\nWAIT 2 1500\\n' | redis-cli -p $primary_resp 2>&1`;
my $elapsed = tv_interval($started);
like($partial, qr/^0\n1$/m, 'WAIT 2 with standby1 paused: one standby replayed the write');
cmp_ok($elapsed, '>=', 1.4, 'WAIT 2 1500 waited for its timeout');
like(`printf 'HSET items:9 value one\\nWAIT 1 0\\n' | redis-cli -p $primary_resp 2>&1`, qr/^0\n1$/m,
	'WAIT 1 0 with standby1 paused: answers once standby2 replayed');
like(`printf 'MULTI\\nHSET items:10 value multi\\nWAIT 2 0\\nEXEC\\n' | redis-cli -p $primary_resp 2>&1`,
	qr/^0\n[01]$/m, 'WAIT inside EXEC answers at once (as Redis)');
like(poll_like($primary_resp, 'CLUSTER NODES', qr/^$ids{standby1} \S+ slave,lag /m), qr/^$ids{standby1} \S+ slave,lag /m,
	'primary: standby1, its replay more than a second behind, is flagged lag');
like(poll_like($resp{standby2}, 'CLUSTER NODES', qr/^$ids{standby1} \S+ slave,lag /m), qr/^$ids{standby1} \S+ slave,lag /m,
	'standby2: its sibling is flagged lag too (as the primary published it)');
like(redis($primary_resp, 'CLUSTER SLOTS'), qr/^$resp{standby1}$/m, 'primary: a lagging standby stays in CLUSTER SLOTS');
$standbys[0]->safe_psql('postgres', 'SELECT pg_wal_replay_resume()');
like(poll_like($resp{standby2}, 'CLUSTER NODES', qr/^$ids{standby1} \S+ slave [0-9a-f]+ .* connected$/m),
	qr/^$ids{standby1} \S+ slave [0-9a-f]+ .* connected$/m, 'standby2: its sibling, caught up, is no longer flagged');
# A standby reports its replay without waiting for wal_receiver_status_interval (10 s here): its
# startup process asks the WAL receiver to when it has replayed all it received.
is($standbys[0]->safe_psql('postgres', 'SHOW wal_receiver_status_interval'), '10s', 'standbys report at 10 s intervals');
$standbys[0]->append_conf('postgresql.conf', "recovery_min_apply_delay = '300ms'");
$standbys[0]->reload;
select(undef, undef, undef, 0.3);    # the startup process reads it
like(`printf 'HSET items:12 value delayed\\nWAIT 2 3000\\n' | redis-cli -p $primary_resp 2>&1`, qr/^0\n2$/m,
	'WAIT 2 3000 with a standby replaying 300 ms late: 2, well before its next status report');
$standbys[0]->append_conf('postgresql.conf', "recovery_min_apply_delay = 0");
$standbys[0]->reload;

my $waited = `printf 'HSET items:6 value waited\\nWAIT 2 10000\\n' | redis-cli -p $primary_resp 2>&1`;
like($waited, qr/^0\n2$/m, 'WAIT 2 after a write: both standbys replayed it');
for my $name (sort keys %resp) {
	like(`printf 'READONLY\\nGET items:6\\n' | redis-cli -p $resp{$name} 2>&1`, qr/waited/,
		"$name: after WAIT the write is read on the standby");
}
# With synchronous_commit = off a commit's WAL is flushed by the walwriter up to wal_writer_delay
# later (10 s here, so that the walwriter, awake, is not nudged by each commit): WAIT covers the write
# all the same (it counts from the end of the WAL inserted, which it flushes).
$primary->append_conf('postgresql.conf', "synchronous_commit = off\nwal_writer_delay = '10s'");
$primary->reload;
my $async_seen = 0;
for my $round (1 .. 5) {
	my $reply = `printf 'HSET items:14 value async$round\\nWAIT 2 5000\\n' | redis-cli -p $primary_resp 2>&1`;
	my $seen = 1;
	for my $name (sort keys %resp) {
		$seen = 0 unless `printf 'READONLY\\nHGET items:14 value\\n' | redis-cli -p $resp{$name} 2>&1` =~ /^async$round$/m;
	}
	$async_seen += $reply =~ /^2$/m && $seen;
}
is($async_seen, 5, 'synchronous_commit = off: after WAIT 2 answered 2, both standbys read the write, 5 times out of 5');
$primary->append_conf('postgresql.conf', "synchronous_commit = on\nwal_writer_delay = '200ms'");
$primary->reload;
like(redis($resp{standby1}, 'WAIT 1 0'), qr/^ERR WAIT cannot be used with replica instances/m, 'standby: WAIT refused');

# ---- stable ids; a stopped standby ----

$standbys[0]->restart;
wait_for_resp($resp{standby1});
my $again = redis($resp{standby1}, 'CLUSTER MYID');
chomp $again;
is($again, $ids{standby1}, 'a restarted standby keeps its id');
$primary->poll_query_until('postgres', q{SELECT count(*) = 2 FROM pg_stat_replication WHERE state = 'streaming'})
	or die 'standby1 not streaming again';
redis($primary_resp, 'CLUSTER NODES');
$standbys[1]->stop;
$primary->poll_query_until('postgres', q{SELECT count(*) = 1 FROM pg_stat_replication}) or die 'standby2 still listed';
like(redis($primary_resp, 'CLUSTER NODES'), qr/^$ids{standby2} \S+ slave,fail .* disconnected$/m,
	'primary: a stopped standby is marked fail');
unlike(redis($primary_resp, 'CLUSTER SLOTS'), qr/^$resp{standby2}$/m, 'primary: CLUSTER SLOTS leaves it out');
like(poll_like($resp{standby1}, 'CLUSTER NODES', qr/^$ids{standby2} \S+ slave,fail /m),
	qr/^$ids{standby2} \S+ slave,fail .* disconnected$/m, 'standby1: its stopped sibling is marked fail');
unlike(redis($resp{standby1}, 'CLUSTER SLOTS'), qr/^$resp{standby2}$/m, 'standby1: CLUSTER SLOTS leaves it out');
like(`printf 'HSET items:11 value one\\nWAIT 2 500\\n' | redis-cli -p $primary_resp 2>&1`, qr/^0\n1$/m,
	'WAIT 2 with one standby stopped: 1 after its timeout');

# Cluster mode off: Redis's error, and a standby serves reads again.
$standbys[0]->append_conf('postgresql.conf', 'local_cache.resp_cluster = off');
$standbys[0]->reload;
my $off;
for (1 .. 100) {
	$off = redis($resp{standby1}, 'CLUSTER SLOTS');
	last if $off =~ /disabled/;
	select(undef, undef, undef, 0.1);
}
like($off, qr/^ERR This instance has cluster support disabled$/m, 'cluster mode off: CLUSTER refused');
like(redis($resp{standby1}, 'GET items:1'), qr/"v1"/, 'cluster mode off: a standby serves reads');

# Failover: standby1 promoted (as an HA manager would) answers as the primary at once.
$standbys[0]->append_conf('postgresql.conf', 'local_cache.resp_cluster = on');
$standbys[0]->reload;
$standbys[0]->promote;
my $role;
for (1 .. 100) {
	$role = redis($resp{standby1}, 'ROLE');
	last if $role =~ /\Amaster\n/;
	select(undef, undef, undef, 0.1);
}
like($role, qr/\Amaster\n/, 'promoted standby: ROLE master');
like(redis($resp{standby1}, 'CLUSTER NODES'), qr/^$ids{standby1} \S+ myself,master - .* connected 0-16383$/m,
	'promoted standby: CLUSTER NODES, itself as master with the same id');
like(redis($resp{standby1}, q{SET items:13 '{"id":13,"value":"after-failover"}'}), qr/^OK$/m,
	'promoted standby: a write runs there (no MOVED)');

done_testing();
