# TLS on the RESP port (local_cache.resp_tls), with certificates made here with openssl:
# password logins over TLS (redis-cli --tls, redis-py ssl=True), plaintext refused on a TLS port, certificate logins as the
# certificate's role (by name, or through a pg_ident.conf map) with that role's privileges only,
# an untrusted CA refused, resp_tls_auth_clients = yes, certificate reload (a bad new file keeps
# the old context), hostssl/hostnossl lines with PostgreSQL's own ssl off, the handshake
# timeout, and the non-loopback plaintext refusal and its override (failed handshakes from one
# address: 012_resp_tenant_limits.pl).
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use FindBin;
use lib $FindBin::RealBin;
use RespTls;

my $dir = PostgreSQL::Test::Utils::tempdir;

my ($node, $port) = tls_node('tls', $dir, 'authentication_timeout = 1s');
certificate($dir, 'mapped_cn', 'someone-else', 'ca');
certificate($dir, 'other_ca', 'other CA', undef);
certificate($dir, 'stranger', 'cert_user', 'other_ca');
open(my $hba, '>', $node->data_dir . '/pg_hba.conf') or die;
print $hba <<'EOF';
local all all trust
hostssl all cert_user 127.0.0.1/32 cert
hostssl all mapped 127.0.0.1/32 cert map=certmap
hostnossl all all 127.0.0.1/32 reject
host all all 127.0.0.1/32 scram-sha-256
EOF
close($hba);
open(my $ident, '>', $node->data_dir . '/pg_ident.conf') or die;
print $ident "certmap someone-else mapped\n";
close($ident);
$node->start;
$node->safe_psql('postgres', q{
SET password_encryption = 'scram-sha-256';
CREATE EXTENSION local_cache;
CREATE TABLE items (id bigint PRIMARY KEY, v text);
INSERT INTO items VALUES (1, 'one');
CREATE TABLE secret (id bigint PRIMARY KEY, v text);
INSERT INTO secret VALUES (1, 'hidden');
SELECT local_cache.enable('items'), local_cache.enable('secret');
CREATE ROLE app LOGIN PASSWORD 'app-secret';
CREATE ROLE cert_user LOGIN;
CREATE ROLE mapped LOGIN;
GRANT SELECT ON items TO app, cert_user, mapped;
});

# redis-cli over TLS with the given client certificate (undef: none), then the command.
sub tls_cli { my ($identity, @command) = @_; return RespTls::tls_cli($port, $dir, $identity, @command); }
sub wait_for_tls { for (1 .. 100) { return if tls_cli(undef, 'PING') =~ /NOAUTH|PONG/; select(undef, undef, undef, 0.1); } }
sub log_since { my ($offset) = @_; return slurp_file($node->logfile, $offset); }
wait_for_tls();

# Password logins over TLS; the hostnossl line does not apply to TLS connections.
is(tls_cli(undef, '--user', 'app', '--pass', 'app-secret', '--no-auth-warning', 'GET', 'items:1'),
	'{"id":1,"v":"one"}', 'TLS with a password: AUTH and GET');
like(tls_cli(undef, 'GET', 'items:1'), qr/NOAUTH/, 'TLS without a certificate or AUTH: NOAUTH');
like(tls_cli(undef, '--user', 'app', '--pass', 'wrong', '--no-auth-warning', 'PING'), qr/WRONGPASS/,
	'TLS with a wrong password: WRONGPASS');
my $info = tls_cli(undef, '--user', 'app', '--pass', 'app-secret', '--no-auth-warning', 'INFO', 'server');
like($info, qr/tcp_port:0\r?\n/, 'INFO: tcp_port 0 on a TLS port, as Redis with tls-port only');
like($info, qr/tls_port:$port\r?\n/, 'INFO: tls_port');
like(tls_cli(undef, '--user', 'app', '--pass', 'app-secret', '--no-auth-warning', 'CONFIG', 'GET', 'tls-port'),
	qr/tls-port\n$port/, 'CONFIG GET tls-port');

# Plaintext on the TLS port: no reply.
my $plain = `redis-cli -p $port PING 2>&1`;
unlike($plain, qr/PONG|NOAUTH|ERR/, 'a plaintext client on the TLS port gets no reply');

# Certificate logins: the CN names the role (cert line), or a pg_ident.conf map does.
is(tls_cli('cert_user', 'GET', 'items:1'), '{"id":1,"v":"one"}', 'certificate login: the CN role reads what it may');
like(tls_cli('cert_user', 'GET', 'secret:1'), qr/NOPERM/, 'certificate login: a table the role may not read answers NOPERM');
my $client_info = tls_cli('cert_user', 'CLIENT', 'INFO');
like($client_info, qr/ user=cert_user /, 'certificate login: CLIENT INFO names the role');
like($client_info, qr/ tls=yes/, 'CLIENT INFO says the connection is TLS');
like(tls_cli('mapped_cn', 'GET', 'items:1'), qr/NOAUTH/,
	'a certificate whose CN is no role with a cert line does not log in by itself');
is(tls_cli('mapped_cn', '--user', 'mapped', '--pass', 'ignored', '--no-auth-warning', 'GET', 'items:1'),
	'{"id":1,"v":"one"}', 'AUTH as a role whose cert line maps the certificate (pg_ident.conf): logged in');
my $offset = -s $node->logfile;
like(tls_cli('cert_user', '--user', 'mapped', '--pass', 'x', '--no-auth-warning', 'PING'), qr/WRONGPASS/,
	'AUTH as a mapped role with a certificate the map does not name: WRONGPASS');
like(log_since($offset), qr/certificate authentication failed for user "mapped"/, 'the failed certificate login is logged');
like(tls_cli(undef, '--user', 'cert_user', '--pass', 'x', '--no-auth-warning', 'PING'), qr/WRONGPASS/,
	'AUTH as a cert-line role without a certificate: WRONGPASS');

# redis-py (ssl=True): a certificate login, and a password over TLS.
sub redis_py
{
	my ($options) = @_;
	my $out = `python3 -c "import redis; r = redis.Redis(host='127.0.0.1', port=$port, ssl=True, ssl_ca_certs='$dir/ca.crt', $options); print(r.get('items:1').decode())" 2>&1`;
	$out =~ s/\s+$//;
	return $out;
}
is(redis_py("ssl_certfile='$dir/cert_user.crt', ssl_keyfile='$dir/cert_user.key'"), '{"id":1,"v":"one"}',
	'redis-py with ssl=True and a client certificate: logged in by the certificate');
is(redis_py("username='app', password='app-secret'"), '{"id":1,"v":"one"}', 'redis-py with ssl=True and a password');

# An untrusted CA fails the handshake (resp_tls_auth_clients = optional: a certificate
# presented must verify).
unlike(tls_cli('stranger', 'PING'), qr/PONG|NOAUTH/, 'a client certificate from an untrusted CA: no session');

# resp_tls_auth_clients = yes: a certificate is required.
$node->append_conf('postgresql.conf', "local_cache.resp_tls_auth_clients = yes\n");
$node->reload;
my $refused = 0;
for (1 .. 50) { last if ($refused = tls_cli(undef, 'PING') !~ /NOAUTH|PONG/); select(undef, undef, undef, 0.1); }
ok($refused, 'auth_clients = yes: a client without a certificate fails the handshake');
is(tls_cli('cert_user', 'PING'), 'PONG', 'auth_clients = yes: a client with a certificate is served');
like(tls_cli('cert_user', 'INFO', 'server'), qr/tls_auth_clients:yes/, 'INFO shows tls_auth_clients');
$node->append_conf('postgresql.conf', "local_cache.resp_tls_auth_clients = optional\n");
$node->reload;
wait_for_tls();

# Certificate reload: new connections get the new certificate.
sub served_serial
{
	my $out = `openssl s_client -connect 127.0.0.1:$port -CAfile $dir/ca.crt </dev/null 2>/dev/null | openssl x509 -noout -serial 2>/dev/null`;
	return $out =~ /serial=(\w+)/ ? $1 : '';
}
my $first_serial = served_serial();
ok($first_serial ne '', "the server presents its certificate (serial $first_serial)");
certificate($dir, 'server2', 'localhost', 'ca');
$node->append_conf('postgresql.conf', qq{
local_cache.resp_tls_cert_file = '$dir/server2.crt'
local_cache.resp_tls_key_file = '$dir/server2.key'
});
$node->reload;
my $second_serial = '';
for (1 .. 50) { $second_serial = served_serial(); last if $second_serial ne $first_serial && $second_serial ne ''; select(undef, undef, undef, 0.1); }
isnt($second_serial, $first_serial, 'after pg_reload_conf() new connections get the new certificate');

# A bad new file keeps the context before, and the log says why.
open(my $bad, '>', "$dir/broken.crt") or die;
print $bad "not a certificate\n";
close($bad);
$offset = -s $node->logfile;
$node->append_conf('postgresql.conf', "local_cache.resp_tls_cert_file = '$dir/broken.crt'\n");
$node->reload;
my $log = '';
for (1 .. 50) { $log = log_since($offset); last if $log =~ /keeping the TLS settings loaded before/; select(undef, undef, undef, 0.1); }
like($log, qr/could not load server certificate file "[^"]*broken\.crt".*keeping the TLS settings loaded before/,
	'a certificate that does not load: logged, the context before is kept');
is(served_serial(), $second_serial, 'the server still presents the certificate loaded before');
is(tls_cli('cert_user', 'PING'), 'PONG', 'and still serves');

# A key others can read is refused as PostgreSQL refuses it.
openssl('ec', '-in', "$dir/server2.key", '-out', "$dir/loose.key");
chmod 0644, "$dir/loose.key";
$offset = -s $node->logfile;
$node->append_conf('postgresql.conf', qq{
local_cache.resp_tls_cert_file = '$dir/server2.crt'
local_cache.resp_tls_key_file = '$dir/loose.key'
});
$node->reload;
for (1 .. 50) { $log = log_since($offset); last if $log =~ /keeping the TLS settings/; select(undef, undef, undef, 0.1); }
like($log, qr/private key file "[^"]*loose\.key" has group or world access/, 'a key file with group or world access is refused');
$node->append_conf('postgresql.conf', "local_cache.resp_tls_key_file = '$dir/server2.key'\n");
$node->reload;

# A client that stops in the middle of the handshake is closed after authentication_timeout.
use IO::Socket::INET;
$offset = -s $node->logfile;
my $silent = IO::Socket::INET->new(PeerAddr => '127.0.0.1', PeerPort => $port, Proto => 'tcp') or die "connect: $!";
my $rin = '';
vec($rin, fileno($silent), 1) = 1;
my $ready = select(my $rout = $rin, undef, undef, 10);
my $got = $ready ? sysread($silent, my $buffer, 100) : undef;
ok($ready && defined $got && $got == 0, 'a client that never completes the handshake is closed (authentication_timeout)');
close($silent);
for (1 .. 30) { $log = log_since($offset); last if $log =~ /TLS handshake not completed/; select(undef, undef, undef, 0.1); }
like($log, qr/TLS handshake not completed within authentication_timeout/, 'the timeout is logged');

$node->stop;

# Without TLS: hostssl lines never apply and hostnossl lines do, with PostgreSQL's ssl off too;
# and no plaintext beyond loopback unless allowed.
my $plain_node = PostgreSQL::Test::Cluster->new('plain');
$plain_node->init;
my $plain_port = PostgreSQL::Test::Cluster::get_free_port();
$plain_node->append_conf('postgresql.conf', qq{
shared_preload_libraries = 'local_cache'
local_cache.resp_port = $plain_port
local_cache.resp_workers = 1
local_cache.resp_listen_addresses = '0.0.0.0'
});
open($hba, '>', $plain_node->data_dir . '/pg_hba.conf') or die;
print $hba <<'EOF';
local all all trust
hostssl all all 127.0.0.1/32 reject
hostnossl all blocked 127.0.0.1/32 reject
host all all 127.0.0.1/32 scram-sha-256
EOF
close($hba);
$plain_node->start;
$plain_node->safe_psql('postgres', q{
SET password_encryption = 'scram-sha-256';
CREATE ROLE app LOGIN PASSWORD 'app-secret';
CREATE ROLE blocked LOGIN PASSWORD 'blocked-secret';
});
$log = '';
for (1 .. 50) { $log = slurp_file($plain_node->logfile); last if $log =~ /not listening/; select(undef, undef, undef, 0.1); }
like($log, qr/not listening on "0\.0\.0\.0": beyond loopback the RESP port requires TLS/,
	'a non-loopback listen address without TLS: not listening, one line says why');
unlike(`redis-cli -p $plain_port PING 2>&1`, qr/PONG|NOAUTH/, 'nothing answers on the RESP port');
is($plain_node->safe_psql('postgres', 'SELECT 1'), '1', 'PostgreSQL keeps running');

$plain_node->append_conf('postgresql.conf', "local_cache.resp_allow_plaintext = on\n");
$plain_node->restart;
my $answer = '';
for (1 .. 100) { $answer = `redis-cli -p $plain_port PING 2>&1`; last if $answer =~ /NOAUTH|PONG/; select(undef, undef, undef, 0.1); }
like($answer, qr/NOAUTH/, 'resp_allow_plaintext = on: the RESP server listens');
like(`redis-cli -p $plain_port --user app --pass app-secret --no-auth-warning PING 2>&1`, qr/PONG/,
	'plaintext: a hostssl line does not apply (PostgreSQL\'s ssl is off too)');
like(`redis-cli -p $plain_port --user blocked --pass blocked-secret --no-auth-warning PING 2>&1`,
	qr/pg_hba\.conf rejects connection for host "127\.0\.0\.1", user "blocked", database "postgres", no encryption/,
	'plaintext: a hostnossl line applies');
$plain_node->stop;
done_testing();
