# RESP logins leave the trace PostgreSQL logins leave: a failed AUTH is logged (LOG, the worker
# goes on) with PostgreSQL's message, the client's address and the pg_hba.conf line that
# applied; a flood of failures from one address is not logged past the back-off's limit, which
# the log says once; a successful AUTH is logged only with log_connections = on.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

my $node = PostgreSQL::Test::Cluster->new('main');
$node->init;
my $resp_port = PostgreSQL::Test::Cluster::get_free_port();
$node->append_conf('postgresql.conf', qq{
shared_preload_libraries = 'local_cache'
local_cache.resp_port = $resp_port
local_cache.resp_workers = 1
log_connections = off
});
# Line 2 applies to every RESP login (from 127.0.0.1).
open(my $hba, '>', $node->data_dir . '/pg_hba.conf') or die "pg_hba.conf: $!";
print $hba "local all all trust\nhost all all 127.0.0.1/32 scram-sha-256\n";
close($hba);
$node->start;
$node->safe_psql('postgres', q{
SET password_encryption = 'scram-sha-256';
CREATE ROLE app LOGIN PASSWORD 'app-secret';
});
for (1 .. 100) { last if `redis-cli -p $resp_port PING 2>&1` =~ /NOAUTH|PONG/; select(undef, undef, undef, 0.1); }

sub auth { my ($user, $password) = @_; return `redis-cli -p $resp_port AUTH $user $password 2>&1`; }
# The log written since byte `offset`, and the number of lines matching `re` in it.
sub log_since { my ($offset) = @_; return slurp_file($node->logfile, $offset); }
sub count_in { my ($text, $re) = @_; my $n = () = $text =~ /$re/g; return $n; }

my $hba_line = qr{Connection matched pg_hba\.conf line 2: "host all all 127\.0\.0\.1/32 scram-sha-256"};
my $client = qr{RESP client host=127\.0\.0\.1 port=\d+\.};

my $offset = -s $node->logfile;
like(auth('app', 'wrong'), qr/^WRONGPASS/, 'wrong password: WRONGPASS');
my $log = log_since($offset);
like($log, qr/LOG:  password authentication failed for user "app"\n[^\n]*DETAIL:  $client\n\s*Password does not match for user "app"\.\n\s*$hba_line/,
	'wrong password: logged as PostgreSQL logs it, with the address and the pg_hba.conf line');
unlike($log, qr/FATAL/, 'logged at LOG: the worker goes on');
unlike($log, qr/wrong/, 'the password is not in the log');

$offset = -s $node->logfile;
like(auth('nosuch', 'whatever'), qr/^WRONGPASS/, 'unknown role: WRONGPASS');
like(log_since($offset), qr/LOG:  password authentication failed for user "nosuch"\n[^\n]*DETAIL:  $client\n\s*Role "nosuch" does not exist\.\n\s*$hba_line/,
	'unknown role: logged, with PostgreSQL\'s detail');

$offset = -s $node->logfile;
like(auth('app', 'app-secret'), qr/^OK/, 'right password: OK');
unlike(log_since($offset), qr/connection authorized/, 'log_connections = off: a successful login is not logged');

# A flood from one address: 30 more failures. The back-off logs up to 20 failures of an address
# in a row; past them one line says that the next ones are not logged.
$offset = -s $node->logfile;
auth('app', "wrong$_") for 1 .. 30;
$log = log_since($offset);
my $logged = count_in($log, qr/password authentication failed for user "app"/);
cmp_ok($logged, '<', 30, "a flood of 30 failed logins from one address: $logged of them logged");
is(count_in($log, qr/more than 20 failed logins from host "127\.0\.0\.1"; further ones are not logged/), 1,
	'the log says once that the next failures of the address are not logged');
like(`redis-cli -p $resp_port PING 2>&1`, qr/NOAUTH/, 'the worker still serves');

$node->append_conf('postgresql.conf', "log_connections = on\n");
$node->restart;
for (1 .. 100) { last if `redis-cli -p $resp_port PING 2>&1` =~ /NOAUTH|PONG/; select(undef, undef, undef, 0.1); }
$offset = -s $node->logfile;
like(auth('app', 'app-secret'), qr/^OK/, 'log_connections = on: right password: OK');
like(log_since($offset), qr/LOG:  connection authorized: user=app database=postgres\n[^\n]*DETAIL:  $client\n\s*$hba_line/,
	'log_connections = on: the successful login is logged, with the address and the pg_hba.conf line');

$node->stop;
done_testing();
