# Misconfigurations are said, once, in the server log (with a HINT where there is something to
# do), never left silent or reported as something else: a local_cache setting's bad value stops
# the server's start as PostgreSQL's own settings do; a resp_role that names no role; a listen
# address that does not resolve (not "requires TLS"); hostssl lines while PostgreSQL's own ssl is
# off (they match on the RESP port's TLS: no "cannot match" line from the RESP workers); and a
# cache too small for its rows (evictions).
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

sub count_matches { my ($text, $re) = @_; my $n = () = $text =~ /$re/g; return $n; }

# A bad value of a local_cache setting: the server does not start.
my $bad = PostgreSQL::Test::Cluster->new('bad_value');
$bad->init;
$bad->append_conf('postgresql.conf', qq{
shared_preload_libraries = 'local_cache'
local_cache.memory = 'lots'
});
ok(!$bad->start(fail_ok => 1), 'local_cache.memory = \'lots\': the server does not start');
like(slurp_file($bad->logfile), qr/FATAL:  invalid value for parameter "local_cache\.memory": "lots"/,
	'and says which value of which setting');

# The rest on one running server.
my $node = PostgreSQL::Test::Cluster->new('node');
$node->init;
my $resp_port = PostgreSQL::Test::Cluster::get_free_port();
$node->append_conf('postgresql.conf', qq{
shared_preload_libraries = 'local_cache'
local_cache.memory = 8MB
local_cache.resp_port = $resp_port
local_cache.resp_workers = 2
local_cache.resp_role = 'no_such_role'
local_cache.resp_listen_addresses = '127.0.0.1, not-an-address.invalid'
ssl = off
});
$node->append_conf('pg_hba.conf', "hostssl all all 127.0.0.1/32 scram-sha-256\n");
$node->start;
$node->safe_psql('postgres', 'CREATE EXTENSION local_cache');

my $log = '';
for (1 .. 100) {
	$log = slurp_file($node->logfile);
	last if $log =~ /local_cache RESP worker 1 listening/ && $log =~ /local_cache RESP worker 0 listening/;
	select(undef, undef, undef, 0.1);
}
like($log, qr/WARNING:  local_cache\.resp_role "no_such_role" names no role: RESP clients that do not AUTH are refused \(NOAUTH\)\n.*HINT:  Create the role, or set local_cache\.resp_role = '' to require AUTH\./,
	'resp_role naming no role: a warning with a hint');
like($log, qr/local_cache RESP: could not resolve "not-an-address\.invalid"/, 'an address that does not resolve is said so');
unlike($log, qr/requires TLS/, 'and not reported as needing TLS');
is(count_matches($log, qr/hostssl record cannot match because SSL is disabled/), 1,
	'ssl = off: only the postmaster says a hostssl line cannot match (its RESP workers do not: theirs can)');

# 8 MB of cache and about 20 MB of rows read through it: one "cache is full" line, with a hint.
$node->safe_psql('postgres', q{
CREATE TABLE wide (id bigint PRIMARY KEY, v text);
INSERT INTO wide SELECT g, repeat('x', 200) FROM generate_series(1, 100000) g;
SELECT local_cache.enable('wide');
SELECT cardinality(local_cache.mget('wide'::regclass, ARRAY(SELECT generate_series(1, 100000))::bigint[]));
SELECT cardinality(local_cache.mget('wide'::regclass, ARRAY(SELECT generate_series(1, 100000))::bigint[]));
});
$log = slurp_file($node->logfile);
is(count_matches($log, qr/LOG:  local_cache: the cache is full: \d+ entries evicted since the server started/), 1,
	'a cache too small for its rows: one line (a minute at most)');
like($log, qr/HINT:  Raise local_cache\.memory \(now 8 MB\), or cache fewer or smaller tables\./, 'with a hint');
$node->stop;
done_testing();
