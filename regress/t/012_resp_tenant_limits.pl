# What one client of a TLS RESP port can cost the others (issue 42): failed handshakes close
# only their own connection, never another client's valid handshake from the same address (clients
# behind one NAT share it), while the log stays bounded (a few lines per address, then one line
# that counts the rest); a connection that completes its handshake but never logs in is closed
# after authentication_timeout, and one that logged in by its certificate is not.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use FindBin;
use lib $FindBin::RealBin;
use RespTls;
use Time::HiRes qw(time);

my $dir = PostgreSQL::Test::Utils::tempdir;

my ($node, $port) = tls_node('tenant_limits', $dir, 'authentication_timeout = 2s');
open(my $hba, '>', $node->data_dir . '/pg_hba.conf') or die;
print $hba <<'EOF';
local all all trust
hostssl all cert_user 127.0.0.1/32 cert
host all all 127.0.0.1/32 scram-sha-256
EOF
close($hba);
$node->start;
$node->safe_psql('postgres', q{
SET password_encryption = 'scram-sha-256';
CREATE EXTENSION local_cache;
CREATE TABLE items (id bigint PRIMARY KEY, v text);
INSERT INTO items VALUES (1, 'one');
SELECT local_cache.enable('items');
CREATE ROLE app LOGIN PASSWORD 'app-secret';
CREATE ROLE cert_user LOGIN;
GRANT SELECT ON items TO app, cert_user;
});

# redis-cli over TLS with the given client certificate (undef: none), then the command.
sub tls_cli { my ($identity, @command) = @_; return RespTls::tls_cli($port, $dir, $identity, @command); }
sub log_since { my ($offset) = @_; return slurp_file($node->logfile, $offset); }
for (1 .. 100) { last if tls_cli(undef, 'PING') =~ /NOAUTH|PONG/; select(undef, undef, undef, 0.1); }

# 30 plaintext clients from 127.0.0.1 fail their handshakes in a burst (the old rule locked the
# address out after 20 for 10 s, certificate logins included).
my $offset = -s $node->logfile;
for (1 .. 30) { `redis-cli -p $port PING 2>&1`; }
is(tls_cli('cert_user', 'GET', 'items:1'), '{"id":1,"v":"one"}',
	'after 30 failed handshakes from 127.0.0.1, a certificate login from it is served');
is(tls_cli(undef, '--user', 'app', '--pass', 'app-secret', '--no-auth-warning', 'GET', 'items:1'), '{"id":1,"v":"one"}',
	'... and a password login over TLS');
my $log = log_since($offset);
my $lines = () = $log =~ /closing client 127\.0\.0\.1:\d+: TLS handshake failed/g;
ok($lines >= 1 && $lines <= 5, "the failed handshakes are logged one by one at most 5 times per address ($lines lines)");
unlike($log, qr/too many failed TLS handshakes/, 'no address is closed without a handshake');
for (1 .. 150) { $log = log_since($offset); last if $log =~ /more failed TLS handshakes from 127\.0\.0\.1/; select(undef, undef, undef, 0.1); }
like($log, qr/2[5-9] more failed TLS handshakes from 127\.0\.0\.1 in the last 10 s/,
	'when the 10 s window ends, one line counts the others');

# s_client holding a connection open for `seconds` (its input then ends), with the given client
# certificate (undef: none) and input; returns what it printed and how long it stayed connected
# (until it ended: the command itself lasts as long as its input).
sub held_tls
{
	my ($identity, $seconds, $input) = @_;
	my $certificate = defined $identity ? "-cert $dir/$identity.crt -key $dir/$identity.key" : '';
	my $start = time;
	my $out = `(printf '$input'; sleep $seconds) | { timeout 20 openssl s_client -connect 127.0.0.1:$port -CAfile $dir/ca.crt $certificate -quiet -no_ign_eof 2>&1; echo "ENDED \$(date +%s.%N)"; }`;
	my $ended = $out =~ /ENDED ([0-9.]+)/ ? $1 : time;
	return ($out, $ended - $start);
}

# A handshake, then nothing: not logged in (no certificate, no AUTH) within authentication_timeout.
$offset = -s $node->logfile;
my ($out, $elapsed) = held_tls(undef, 8, '');
ok($elapsed < 6, sprintf('a TLS client that never logs in is closed after authentication_timeout (after %.1f s)', $elapsed));
for (1 .. 30) { $log = log_since($offset); last if $log =~ /not logged in within authentication_timeout/; select(undef, undef, undef, 0.1); }
like($log, qr/not logged in within authentication_timeout/, 'the log says why');

# Logged in by its certificate at the handshake: it stays.
($out, $elapsed) = held_tls('cert_user', 4, '');
ok($elapsed >= 4, sprintf('a certificate login stays connected past authentication_timeout (%.1f s)', $elapsed));
($out, $elapsed) = held_tls(undef, 4, 'AUTH app app-secret\r\n');
like($out, qr/\+OK/, 'AUTH over TLS');
ok($elapsed >= 4, sprintf('... and it stays connected past authentication_timeout (%.1f s)', $elapsed));

$node->stop;
done_testing();
