# A primary and two hot standbys with local_cache.resp_cluster on answer as one Redis Cluster
# shard: every node's CLUSTER SLOTS, SHARDS, NODES, MYID, INFO and ROLE name the primary (its RESP
# port) and, on the primary, both standbys (their endpoints from application_name); node ids are
# distinct, agree between nodes and survive a restart; a standby answers -MOVED to the primary for
# writes and for reads before READONLY, and serves reads after READONLY; `redis-cli -c` follows
# MOVED from a standby; WAIT 2 after a write returns 2 once both standbys replayed it; a stopped
# standby is marked failed on the primary.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

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
wal_receiver_status_interval = 1
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
like(redis($primary_resp, 'GET items:5'), qr/via-cluster/, 'the primary reads it (no MOVED there)');

# ---- WAIT ----

my $waited = `printf 'HSET items:6 value waited\\nWAIT 2 10000\\n' | redis-cli -p $primary_resp 2>&1`;
like($waited, qr/^0\n2$/m, 'WAIT 2 after a write: both standbys replayed it');
for my $name (sort keys %resp) {
	like(`printf 'READONLY\\nGET items:6\\n' | redis-cli -p $resp{$name} 2>&1`, qr/waited/,
		"$name: after WAIT the write is read on the standby");
}
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

done_testing();
