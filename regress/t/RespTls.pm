# regress/t/RespTls.pm: what the TAP tests of the RESP port's TLS share: certificates made here
# with openssl (a CA, and keys and certificates it signs), a cluster whose RESP port speaks TLS,
# and redis-cli over TLS.
package RespTls;

use strict;
use warnings;
use Exporter 'import';
use PostgreSQL::Test::Cluster;

our @EXPORT = qw(certificate openssl tls_node);

sub openssl
{
	my @args = @_;
	system("openssl @{[map { quotemeta } @args]} 2>/dev/null") == 0 or die "openssl @args failed";
	return;
}

# certificate(DIR, NAME, CN, CA): DIR/NAME.key and DIR/NAME.crt for `CN`, signed by the CA
# DIR/CA.* (undef: a self-signed CA).
sub certificate
{
	my ($dir, $name, $cn, $ca) = @_;
	openssl('req', '-new', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:P-256', '-nodes', '-subj', "/CN=$cn",
		'-keyout', "$dir/$name.key", '-out', "$dir/$name.csr");
	open(my $ext, '>', "$dir/$name.ext") or die;
	print $ext $ca ? "subjectAltName=DNS:localhost,IP:127.0.0.1\n" : "basicConstraints=critical,CA:TRUE\n";
	close($ext);
	openssl('x509', '-req', '-in', "$dir/$name.csr", '-days', '2', '-extfile', "$dir/$name.ext",
		'-out', "$dir/$name.crt",
		$ca ? ('-CA', "$dir/$ca.crt", '-CAkey', "$dir/$ca.key", '-CAcreateserial') : ('-signkey', "$dir/$name.key"));
	chmod 0600, "$dir/$name.key";
	return;
}

# tls_node(NAME, DIR, CONF): a cluster (not started) whose RESP port (one worker) speaks TLS with
# DIR/server.* signed by DIR/ca.* (made here, with DIR/cert_user.*, a client certificate for
# CN=cert_user), and CONF in postgresql.conf; returns it and its RESP port.
sub tls_node
{
	my ($name, $dir, $conf) = @_;
	certificate($dir, 'ca', 'test CA', undef);
	certificate($dir, 'server', 'localhost', 'ca');
	certificate($dir, 'cert_user', 'cert_user', 'ca');
	my $node = PostgreSQL::Test::Cluster->new($name);
	$node->init;
	my $port = PostgreSQL::Test::Cluster::get_free_port();
	$node->append_conf('postgresql.conf', qq{
shared_preload_libraries = 'local_cache'
local_cache.resp_port = $port
local_cache.resp_workers = 1
local_cache.resp_tls = on
local_cache.resp_tls_cert_file = '$dir/server.crt'
local_cache.resp_tls_key_file = '$dir/server.key'
local_cache.resp_tls_ca_file = '$dir/ca.crt'
$conf
});
	return ($node, $port);
}

# tls_cli(PORT, DIR, IDENTITY, COMMAND...): redis-cli over TLS (CA DIR/ca.crt) with the client
# certificate DIR/IDENTITY.* (undef: none); its output without trailing white space.
sub tls_cli
{
	my ($port, $dir, $identity, @command) = @_;
	my @tls = ('--tls', '--cacert', "$dir/ca.crt");
	push @tls, ('--cert', "$dir/$identity.crt", '--key', "$dir/$identity.key") if defined $identity;
	my $out = `redis-cli -p $port @tls @command 2>&1`;
	$out =~ s/\s+$//;
	return $out;
}

1;
