# CLIENT TRACKING and two-phase commit across the moments a RESP worker could miss a PREPARE's
# records: a worker started after the PREPARE (the launcher restarting it on a primary, a
# restarted standby, a standby built from a base backup while the transaction was prepared), and
# a transaction prepared on the primary while local_cache.wal_invalidations was off (it wrote no
# INVALIDATE record) and committed after it was on again. In each case a connection that tracks
# a key the transaction changed is told (a flush is enough) once COMMIT PREPARED is visible.
use strict;
use warnings;
use IO::Select;
use IO::Socket::INET;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

# ---- a RESP3 connection, just enough for HELLO, CLIENT TRACKING, GET and pushes ----

# One reply (RESP2 or RESP3) from $sock's buffer, reading more as needed; undef on timeout.
sub read_reply
{
	my ($conn, $deadline) = @_;
	my $line = read_line($conn, $deadline);
	return undef unless defined $line;
	my ($type, $rest) = (substr($line, 0, 1), substr($line, 1));
	if ($type eq '$' || $type eq '=') {
		return '(nil)' if $rest < 0;
		my $bytes = read_bytes($conn, $rest + 2, $deadline);
		return defined $bytes ? substr($bytes, 0, $rest) : undef;
	}
	if ($type eq '*' || $type eq '>' || $type eq '%' || $type eq '~') {
		my $count = $type eq '%' ? 2 * $rest : $rest;
		my @items;
		for (1 .. $count) {
			my $item = read_reply($conn, $deadline);
			return undef unless defined $item;
			push @items, $item;
		}
		return ($type eq '>' ? 'push:' : '') . '[' . join(',', @items) . ']';
	}
	return '(nil)' if $type eq '_';
	return $line;
}

sub read_bytes
{
	my ($conn, $n, $deadline) = @_;
	while (length($conn->{buffer}) < $n) {
		my $left = $deadline - time();
		return undef if $left <= 0 || !IO::Select->new($conn->{sock})->can_read($left);
		my $got = sysread($conn->{sock}, my $chunk, 65536);
		return undef unless $got;
		$conn->{buffer} .= $chunk;
	}
	return substr($conn->{buffer}, 0, $n, '');
}

sub read_line
{
	my ($conn, $deadline) = @_;
	while ((my $end = index($conn->{buffer}, "\r\n")) < 0) {
		my $left = $deadline - time();
		return undef if $left <= 0 || !IO::Select->new($conn->{sock})->can_read($left);
		my $got = sysread($conn->{sock}, my $chunk, 65536);
		return undef unless $got;
		$conn->{buffer} .= $chunk;
	}
	my $end = index($conn->{buffer}, "\r\n");
	my $line = substr($conn->{buffer}, 0, $end + 2, '');
	return substr($line, 0, $end);
}

sub command
{
	my ($conn, @args) = @_;
	my $request = '*' . scalar(@args) . "\r\n" . join('', map { '$' . length($_) . "\r\n$_\r\n" } @args);
	syswrite($conn->{sock}, $request) == length($request) or die "writing to RESP: $!";
	my $reply = read_reply($conn, time() + 10);
	die "no reply to @args" unless defined $reply;
	return $reply;
}

# A RESP3 connection with CLIENT TRACKING ON that has read $key: returns it and what GET said.
sub tracker
{
	my ($port, $key) = @_;
	my $sock = IO::Socket::INET->new(PeerAddr => '127.0.0.1', PeerPort => $port, Proto => 'tcp')
	  or die "connecting to RESP port $port: $!";
	my $conn = { sock => $sock, buffer => '' };
	command($conn, 'HELLO', '3');
	is(command($conn, 'CLIENT', 'TRACKING', 'ON'), '+OK', "port $port: CLIENT TRACKING ON");
	# A standby's START makes its worker push a flush to every tracking connection when it reads
	# the record, which may be after this one turned tracking on: harmless (a client empties its
	# cache), and a push before the GET's reply, not the reply.
	my $reply = command($conn, 'GET', $key);
	$reply = read_reply($conn, time() + 10) while defined $reply && $reply eq 'push:[invalidate,(nil)]';
	return ($conn, $reply);
}

# The next push within $seconds (undef if none).
sub next_push
{
	my ($conn, $seconds) = @_;
	my $reply = read_reply($conn, time() + $seconds);
	return $reply;
}

# Whether the RESP server on $port answers $key with $value (its workers are up).
sub wait_for_resp
{
	my ($port, $key, $value) = @_;
	for (1 .. 300) {
		my $sock = IO::Socket::INET->new(PeerAddr => '127.0.0.1', PeerPort => $port, Proto => 'tcp');
		if ($sock) {
			my $conn = { sock => $sock, buffer => '' };
			my $got = eval { command($conn, 'GET', $key) };
			close($sock);
			return 1 if defined $got && $got eq $value;
		}
		select(undef, undef, undef, 0.1);
	}
	return 0;
}

# ---- the clusters ----

my $primary = PostgreSQL::Test::Cluster->new('primary');
$primary->init(allows_streaming => 1);
my $primary_resp = PostgreSQL::Test::Cluster::get_free_port();
$primary->append_conf('postgresql.conf', qq{
shared_preload_libraries = 'local_cache'
max_prepared_transactions = 10
# the standbys have no slot: WAL a restarted standby still needs must not be recycled
wal_keep_size = 256MB
local_cache.resp_port = $primary_resp
local_cache.resp_role = 'resp_reader'
local_cache.resp_workers = 1
local_cache.resp_write_workers = 0
});
$primary->start;
$primary->safe_psql('postgres', q{
CREATE EXTENSION local_cache;
CREATE TABLE items (id bigint PRIMARY KEY, value text);
INSERT INTO items SELECT g, 'v' || g FROM generate_series(1, 50) g;
SELECT local_cache.enable('items');
CREATE ROLE resp_reader;
GRANT SELECT ON items TO resp_reader;
});
$primary->backup('base');

sub new_standby
{
	my ($name, $backup) = @_;
	my $standby = PostgreSQL::Test::Cluster->new($name);
	$standby->init_from_backup($primary, $backup, has_streaming => 1);
	my $port = PostgreSQL::Test::Cluster::get_free_port();
	$standby->append_conf('postgresql.conf', "local_cache.resp_port = $port\n");
	$standby->start;
	$primary->wait_for_catchup($standby, 'replay');
	return ($standby, $port);
}
my ($standby, $standby_resp) = new_standby('standby', 'base');

sub row { my ($id, $value) = @_; return qq({"id":$id,"value":"$value"}); }

# prepare ID VALUE GID: a prepared transaction that sets row ID to VALUE.
sub prepare
{
	my ($id, $value, $gid) = @_;
	$primary->safe_psql('postgres', "BEGIN; UPDATE items SET value = '$value' WHERE id = $id; PREPARE TRANSACTION '$gid'");
}

# After COMMIT PREPARED on the primary: $conn, which read row $id before, is told.
sub commit_and_expect_push
{
	my ($conn, $port, $id, $gid, $label) = @_;
	$primary->safe_psql('postgres', "COMMIT PREPARED '$gid'");
	my $push = next_push($conn, 10);
	ok(defined $push && $push =~ /^push:\[invalidate,(\(nil\)|\[items:$id\])\]$/,
		"$label: COMMIT PREPARED pushes the key or a flush") or diag('got ' . ($push // 'no push in 10 s'));
	my $value = $primary->safe_psql('postgres', "SELECT value FROM items WHERE id = $id");
	ok(wait_for_resp($port, "items:$id", row($id, $value)), "$label: GET then answers the committed row");
}

# 1. Primary: the RESP worker is restarted while the transaction is prepared.
prepare(1, 'p1', 'gid_worker');
$primary->safe_psql('postgres',
	q{SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE backend_type = 'local_cache RESP worker'});
ok(wait_for_resp($primary_resp, 'items:2', row(2, 'v2')), 'primary: the launcher started the RESP worker again');
my ($conn, $read) = tracker($primary_resp, 'items:1');
is($read, row(1, 'v1'), 'primary: the prepared change is not visible yet');
commit_and_expect_push($conn, $primary_resp, 1, 'gid_worker', 'primary, worker restarted');

# 2. A standby restarted while the transaction is prepared, after a restartpoint past the
# PREPARE (so it is not replayed again).
prepare(3, 'p3', 'gid_restart');
$primary->safe_psql('postgres', 'CHECKPOINT');
$primary->wait_for_catchup($standby, 'replay');
$standby->safe_psql('postgres', 'CHECKPOINT');
$standby->restart;
ok(wait_for_resp($standby_resp, 'items:2', row(2, 'v2')), 'restarted standby: RESP serves');
($conn, $read) = tracker($standby_resp, 'items:3');
is($read, row(3, 'v3'), 'restarted standby: the prepared change is not visible yet');
commit_and_expect_push($conn, $standby_resp, 3, 'gid_restart', 'standby restarted while prepared');

# 3. A standby built from a base backup taken while the transaction is prepared.
prepare(4, 'p4', 'gid_backup');
$primary->backup('prepared');
my ($built, $built_resp) = new_standby('built', 'prepared');
ok(wait_for_resp($built_resp, 'items:2', row(2, 'v2')), 'standby from a backup: RESP serves');
($conn, $read) = tracker($built_resp, 'items:4');
is($read, row(4, 'v4'), 'standby from a backup: the prepared change is not visible yet');
commit_and_expect_push($conn, $built_resp, 4, 'gid_backup', 'standby built while prepared');
$built->stop;

# 4. Prepared while local_cache.wal_invalidations = off (no INVALIDATE record), committed once
# it is on again: the standby's START makes its workers watch the transactions then running.
sub set_wal_invalidations
{
	my ($value) = @_;
	$primary->safe_psql('postgres', "ALTER SYSTEM SET local_cache.wal_invalidations = $value");
	$primary->reload;
	$primary->poll_query_until('postgres', "SELECT current_setting('local_cache.wal_invalidations') = '$value'")
	  or die "local_cache.wal_invalidations did not become $value";
}
set_wal_invalidations('off');
prepare(5, 'p5', 'gid_unlogged');
set_wal_invalidations('on');
$primary->safe_psql('postgres', q{UPDATE items SET value = 'logged' WHERE id = 6});
$primary->wait_for_catchup($standby, 'replay');
ok(wait_for_resp($standby_resp, 'items:6', row(6, 'logged')), 'wal_invalidations on again: the standby serves');
($conn, $read) = tracker($standby_resp, 'items:5');
is($read, row(5, 'v5'), 'unlogged PREPARE: not visible on the standby yet');
commit_and_expect_push($conn, $standby_resp, 5, 'gid_unlogged', 'prepared while unlogged, committed when logged');

$standby->stop;
$primary->stop;
done_testing();
