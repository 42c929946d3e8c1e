# RESP writes in a database whose encoding is not UTF-8 (EUC_JP): RESP has no client encoding,
# so a client's bytes are taken as the server encoding's; what that encoding allows is stored
# byte for byte as SQL stores the same text, what it does not is refused as SQL refuses it
# (SQLSTATE 22021), nothing written.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use IO::Socket::INET;
use Time::HiRes qw(usleep);

my $resp_port = PostgreSQL::Test::Cluster::get_free_port();
my $node = PostgreSQL::Test::Cluster->new('euc_jp');
$node->init(extra => ['--encoding=EUC_JP', '--locale=C']);
$node->append_conf('postgresql.conf', qq{
shared_preload_libraries = 'local_cache'
local_cache.resp_port = $resp_port
local_cache.resp_role = 'regress_writer'
local_cache.resp_workers = 1
});
$node->start;
$node->safe_psql('postgres', q{
CREATE EXTENSION local_cache;
CREATE ROLE regress_writer;
CREATE TABLE jp (id integer PRIMARY KEY, t text, c character(2));
CREATE TABLE jp_sql (LIKE jp);
SELECT local_cache.enable('jp');
GRANT SELECT, INSERT, UPDATE ON jp TO regress_writer;
});

# resp(ARGS...): one command on a connection of its own; the first line of the reply
sub resp
{
	my @args = @_;
	my $request = '*' . scalar(@args) . "\r\n" . join('', map { '$' . length($_) . "\r\n$_\r\n" } @args);
	for (1 .. 100)
	{
		my $socket = IO::Socket::INET->new(PeerAddr => '127.0.0.1', PeerPort => $resp_port, Timeout => 10);
		if (!$socket)
		{
			usleep(100_000);
			next;
		}
		binmode $socket;
		print $socket $request;
		my $reply = <$socket> // '';
		close $socket;
		$reply =~ s/\r\n$//;
		return $reply;
	}
	return 'no connection';
}

# The bytes of a column as hex, in either table.
sub stored
{
	my ($table, $column, $id) = @_;
	return $node->safe_psql('postgres',
		"SELECT coalesce(encode(convert_to($column, 'EUC_JP'), 'hex'), 'null') FROM $table WHERE id = $id");
}

# "あい" in EUC_JP: 0xa4a2 0xa4a4
my $valid = "\xa4\xa2\xa4\xa4";
is(resp('HSET', 'jp:1', 't', $valid, 'c', "\xa4\xa2"), ':2', 'HSET of valid EUC_JP text');
$node->safe_psql('postgres', "SET client_encoding = 'EUC_JP'; INSERT INTO jp_sql VALUES (1, E'\\xa4\\xa2\\xa4\\xa4', E'\\xa4\\xa2')");
is(stored('jp', 't', 1), stored('jp_sql', 't', 1), '... stores the bytes SQL stores for the same text');
is(stored('jp', 't', 1), 'a4a2a4a4', '... which are the bytes sent');
is(stored('jp', 'c', 1), stored('jp_sql', 'c', 1), '... and character(2) counts characters, not bytes, as SQL does');
is(resp('HSET', 'jp:1', 'c', "\xa4\xa2\xa4\xa4\xa4\xa6"), '-ERR value too long for type character(2) (SQLSTATE 22001)',
	'three characters do not fit character(2)');

my ($ret, $out, $err) = $node->psql('postgres',
	"SET client_encoding = 'EUC_JP'; INSERT INTO jp_sql VALUES (2, E'a\\xa4b')");
like($err, qr/invalid byte sequence for encoding "EUC_JP": 0xa4 0x62/, 'SQL refuses a lead byte followed by ASCII');
is(resp('HSET', 'jp:2', 't', "a\xa4b"),
	'-ERR invalid byte sequence for encoding "EUC_JP": 0xa4 0x62 (SQLSTATE 22021)', '... and so does HSET, with its message');
is(resp('SET', 'jp:2', "{\"t\": \"a\xa4b\"}"),
	'-ERR invalid byte sequence for encoding "EUC_JP": 0xa4 0x62 (SQLSTATE 22021)', '... and SET');
is(stored('jp', 't', 2), '', 'nothing was written');

$node->stop;
done_testing();
