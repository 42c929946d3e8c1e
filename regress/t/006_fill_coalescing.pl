# One read of the table per missed key under a stampede (store.h's fill claims):
#
#  - a session that misses a key another session is reading from the table waits for that
#    fill and answers from it: one fill, one coalesced miss, the same row;
#  - the wait is bounded by local_cache.fill_wait: past it the session reads the table itself;
#  - a filler that fails (cancelled: ERROR) or dies (terminated: FATAL) ends its claim, so
#    the waiters go on at once instead of waiting out local_cache.fill_wait (60 s here; a
#    leftover claim would hold them that long, past the 30 s this test allows).
#
# The filler is held in the middle of its fill deterministically: another transaction runs
# REINDEX on the primary key (ACCESS EXCLUSIVE on the index only), so the filler, which has
# found the key missing and claimed it, waits for the index lock when it reads the table.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(usleep);

my $node = PostgreSQL::Test::Cluster->new('main');
$node->init;
$node->append_conf('postgresql.conf', qq{
shared_preload_libraries = 'local_cache'
local_cache.memory = 16MB
});
$node->start;
$node->safe_psql('postgres', q{
CREATE EXTENSION local_cache;
CREATE TABLE items (id bigint PRIMARY KEY, value text);
INSERT INTO items SELECT g, 'row ' || g FROM generate_series(1, 100) g;
SELECT local_cache.enable('items');
});

my $counts_sql = q{SELECT misses || ' misses, ' || fills || ' fills, ' || coalesced_misses || ' coalesced'
	FROM local_cache.stats WHERE relation = 'items'::regclass};

# A session with its relation facts already loaded (so that the only lock it still needs for a
# miss is the index's) and the given fill_wait.
sub reader
{
	my ($fill_wait) = @_;
	my $session = $node->background_psql('postgres', on_error_stop => 0);
	$session->query_safe(qq{SET local_cache.fill_wait = '$fill_wait'});
	$session->query_safe(q{SELECT local_cache.mget('items', '{100}')});
	return $session;
}

# Sends an mget of one key without waiting for its answer.
sub start_mget
{
	my ($session, $key) = @_;
	$session->query_until(qr/sent/, qq{\\echo sent\nSELECT (local_cache.mget('items', '{$key}'))[1]::text;\n});
}

# The answer of the mget start_mget sent.
sub finish
{
	my ($session) = @_;
	my $out = $session->query('');
	$out =~ s/^\s+|\s+$//g;
	return $out;
}

sub pid_of
{
	my ($session) = @_;
	return $session->query_safe('SELECT pg_backend_pid()');
}

sub waits_for_index_lock
{
	my ($pid) = @_;
	return $node->poll_query_until('postgres', qq{
		SELECT EXISTS (SELECT FROM pg_locks WHERE pid = $pid AND NOT granted
		               AND relation = 'items_pkey'::regclass)});
}

sub waits_for_fill
{
	my ($pid) = @_;
	return $node->poll_query_until('postgres', qq{
		SELECT EXISTS (SELECT FROM pg_stat_activity WHERE pid = $pid AND wait_event_type = 'Extension')});
}

# Whether the session waits for the index lock within 30 s: before its fill_wait (60 s) ran out.
sub soon_waits_for_index_lock
{
	my ($pid) = @_;
	foreach (1 .. 300)
	{
		return 1 if $node->safe_psql('postgres', qq{
			SELECT EXISTS (SELECT FROM pg_locks WHERE pid = $pid AND NOT granted
			               AND relation = 'items_pkey'::regclass)}) eq 't';
		usleep(100_000);
	}
	return 0;
}


sub reset_counts
{
	$node->safe_psql('postgres', q{SELECT local_cache.flush('items'); SELECT local_cache.reset_stats()});
}

# ---- a stampede of two: one fill, one coalesced miss
my $filler = reader('60s');
my $waiter = reader('60s');
my $impatient = reader('50ms');
my ($filler_pid, $waiter_pid, $impatient_pid) = map { pid_of($_) } ($filler, $waiter, $impatient);
my $holder = $node->background_psql('postgres');

# Holds the filler inside its fill of `key`, then lets `second` miss the key too; returns once
# `second` is seen waiting as `second_waits` says (for the fill, or for the index itself).
sub race
{
	my ($key, $what, $second, $second_waits, $second_pid, $how_second_waits) = @_;
	reset_counts();
	$holder->query_safe('BEGIN; REINDEX INDEX items_pkey');
	start_mget($filler, $key);
	ok(waits_for_index_lock($filler_pid), "$what: the filler has claimed key $key and waits for the index");
	start_mget($second, $key);
	ok($second_waits->($second_pid), "$what: a second miss $how_second_waits");
}

race(7, 'a row', $waiter, \&waits_for_fill, $waiter_pid, 'waits for that fill instead of reading the table');
$holder->query_safe('ROLLBACK');
is(finish($filler), '(7,"row 7")', 'the filler answers the row');
is(finish($waiter), '(7,"row 7")', 'the waiter answers the same row from the fill');
is($node->safe_psql('postgres', $counts_sql), '2 misses, 1 fills, 1 coalesced', 'one fill; one coalesced miss');

race(1000, 'an absent key', $waiter, \&waits_for_fill, $waiter_pid, 'waits for its fill');
$holder->query_safe('ROLLBACK');
is(finish($filler), '', 'the filler answers NULL');
is(finish($waiter), '', 'the waiter answers NULL from the negative entry');
is($node->safe_psql('postgres', $counts_sql), '2 misses, 1 fills, 1 coalesced', 'one fill; one coalesced miss');

# ---- the wait is bounded by local_cache.fill_wait
race(8, 'fill_wait = 50ms', $impatient, \&waits_for_index_lock, $impatient_pid,
	'gives up waiting and reads the table itself');
$holder->query_safe('ROLLBACK');
is(finish($filler), '(8,"row 8")', 'the filler answers the row');
is(finish($impatient), '(8,"row 8")', 'so does the one that read the table itself');
like($node->safe_psql('postgres', $counts_sql), qr/^2 misses, [12] fills, 0 coalesced$/, 'no coalesced miss');

# ---- a filler that fails or dies ends its claim: the waiter goes on at once
foreach my $ending (['cancelled', 'pg_cancel_backend'], ['terminated', 'pg_terminate_backend'])
{
	my ($how, $function) = @$ending;
	race(9, $how, $waiter, \&waits_for_fill, $waiter_pid, 'waits for its fill');
	$node->safe_psql('postgres', "SELECT $function($filler_pid)");
	ok(soon_waits_for_index_lock($waiter_pid), "$how: the claim ended with the filler's $how, the waiter reads the table");
	$holder->query_safe('ROLLBACK');
	is(finish($waiter), '(9,"row 9")', "$how: the waiter answers the row");
	if ($how eq 'cancelled')
	{
		is(scalar $filler->query('SELECT 1'), '1', 'the cancelled session goes on');
		like($filler->{stderr}, qr/canceling statement due to user request/, '... after the cancel');
		$filler->{stderr} = '';
	}
	else
	{
		eval { $filler->quit };    # its connection is gone: psql has exited
		$filler = reader('60s');
		$filler_pid = pid_of($filler);
	}
}

# Nothing was left claimed: a fresh miss of each key fills at once.
reset_counts();
is($node->safe_psql('postgres', q{SET local_cache.fill_wait = '60s';
	SELECT array_length(local_cache.mget('items', '{7,8,9,1000}'), 1)}), '4', 'later misses of the keys are read at once');
is($node->safe_psql('postgres', $counts_sql), '4 misses, 4 fills, 0 coalesced', '... and filled');

$_->quit for ($filler, $waiter, $impatient, $holder);
$node->stop;
done_testing();
