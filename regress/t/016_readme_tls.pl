# The README's TLS section runs as written: its openssl commands make the certificates in the
# data directory, its postgresql.conf and pg_hba.conf lines serve the RESP port over TLS, and its
# redis-cli command logs in as app_reader by the client certificate, without AUTH. Only the port
# (a free one for 6380) and the host (127.0.0.1 for db.example, named by --sni) are replaced.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(usleep);

my $readme = slurp_file("$ENV{TESTDIR}/README.md");
my ($section) = $readme =~ /\n### TLS\n(.*?)\n### /s;
my @blocks = $section =~ /```[a-z]*\n(.*?)```/sg;
is(scalar(@blocks), 3, 'the TLS section has three blocks: openssl, configuration, redis-cli');
my ($openssl, $conf, $command) = @blocks;

my $node = PostgreSQL::Test::Cluster->new('readme_tls');
$node->init;
my $port = PostgreSQL::Test::Cluster::get_free_port();
my $pgdata = $node->data_dir;

my $made = system('bash', '-euc', "export PGDATA='$pgdata'\n$openssl") == 0;
ok($made, 'the openssl commands run');
ok(-f "$pgdata/server.crt" && -f "$pgdata/app_reader.crt", 'and make the certificates');
is(sprintf('%04o', (stat("$pgdata/server.key"))[2] & 07777), '0600', 'the key is readable by its owner alone');

my ($postgresql_conf, $hba_conf) = split /^# pg_hba\.conf.*\n(?:#.*\n)*/m, $conf;
$postgresql_conf =~ s/\b6380\b/$port/g;
$node->append_conf('postgresql.conf', "shared_preload_libraries = 'local_cache'\n$postgresql_conf");
# The README's lines come first, as it says; the test cluster's own (local trust) after them.
my $hba = slurp_file("$pgdata/pg_hba.conf");
open(my $out, '>', "$pgdata/pg_hba.conf") or die;
print $out $hba_conf, $hba;
close($out);
$node->start;
$node->safe_psql('postgres', q{
CREATE EXTENSION local_cache;
CREATE TABLE items (id bigint PRIMARY KEY, value text);
INSERT INTO items VALUES (1, 'value 1');
SELECT local_cache.enable('public.items');
CREATE ROLE app_reader LOGIN;
GRANT SELECT ON items TO app_reader;
});

chomp $command;
$command =~ s/-h db\.example -p 6380/--sni db.example -h 127.0.0.1 -p $port/ or die "unexpected command: $command";
my $got = '';
for (1 .. 100) {
	$got = `cd '$pgdata' && $command 2>&1`;
	last if $got =~ /value 1/;
	usleep(100_000);
}
is($got, qq({"id":1,"value":"value 1"}\n), 'redis-cli with the client certificate reads the row, no AUTH');
my $without = `cd '$pgdata' && redis-cli --tls --cacert root.crt --sni db.example -h 127.0.0.1 -p $port GET items:1 2>&1`;
like($without, qr/NOAUTH/, 'without the certificate the connection must AUTH');
$node->stop;
done_testing();
