#!/usr/bin/perl
# regress/resp/resp_raw.pl: a RESP client for byte-exact tests of the RESP server.
#
#   resp_raw.pl PORT STEP...        runs the steps on one TCP connection to 127.0.0.1:PORT and
#                                   prints what came back, escaped, on one line
#   resp_raw.pl --escape            escapes stdin the same way (to build expected output)
#
# Steps:
#   send:BYTES        write BYTES (escaped: \r \n \t \\ \xHH)
#   slow:BYTES        write BYTES one byte at a time, 2 ms apart (requests split at every byte)
#   repeat:N:BYTES    write BYTES N times in one write (a pipeline)
#   read:N            read N complete replies (RESP2 and RESP3) and print their bytes
#   skip:N            read N complete replies and print nothing
#   eof:SECS          wait up to SECS for the server to close: prints <EOF> if it did, <OPEN> if
#                     not (after any bytes that arrived meanwhile)
#   quiet:MS          wait MS milliseconds and print whatever arrived (nothing, normally)
#   flood:N:BYTES     write BYTES N times without reading replies, until the server stops
#                     taking them or the connection fails; prints nothing
#   gone:SECS         read and discard until the connection is closed or reset: prints <GONE>
#                     if that happens within SECS, <ALIVE> if not
#   timeout:SECS      per-step timeout for read/skip (default 10)
#
# Escaping of the output: printable ASCII as is, except \ as \\; CR, LF, TAB as \r \n \t;
# every other byte as \xHH. A read that times out prints the partial reply and <TIMEOUT>; a
# read cut by the server closing prints the partial reply and <EOF>; unparsable reply bytes
# print <BADREPLY>. The exit status is 0 unless the arguments are wrong or connecting fails.
use strict;
use warnings;
use IO::Socket::INET;
use IO::Select;
use Time::HiRes qw(time sleep);
use Errno qw(EAGAIN EWOULDBLOCK EINTR);

$SIG{PIPE} = 'IGNORE';
binmode STDOUT;
binmode STDIN;

sub escape {
    my ($s) = @_;
    $s =~ s/([\\\x00-\x1f\x7f-\xff])/
        $1 eq "\\" ? "\\\\" : $1 eq "\r" ? "\\r" : $1 eq "\n" ? "\\n" : $1 eq "\t" ? "\\t"
        : sprintf("\\x%02x", ord($1))/ge;
    return $s;
}

sub unescape {
    my ($s) = @_;
    $s =~ s/\\(x([0-9a-fA-F]{2})|r|n|t|\\)/
        defined $2 ? chr(hex($2)) : $1 eq 'r' ? "\r" : $1 eq 'n' ? "\n" : $1 eq 't' ? "\t" : "\\"/ge;
    return $s;
}

if (@ARGV == 1 && $ARGV[0] eq '--escape') {
    local $/;
    my $in = <STDIN>;
    print escape(defined $in ? $in : '');
    exit 0;
}

die "usage: $0 PORT STEP... | $0 --escape\n" unless @ARGV >= 1 && $ARGV[0] =~ /^\d+$/;
my $port = shift @ARGV;

my $sock = IO::Socket::INET->new(PeerAddr => '127.0.0.1', PeerPort => $port, Proto => 'tcp',
                                 Timeout => 10)
    or do { print "<CONNECT FAILED: $!>\n"; exit 1 };
binmode $sock;
$sock->blocking(0);
my $sel = IO::Select->new($sock);

my $buf = '';        # bytes received and not yet consumed by a step
my $closed = 0;      # the server closed (EOF or reset)
my $out = '';
my $step_timeout = 10;

# Reads what is available within $wait seconds into $buf; returns the number of bytes read
# (0 on timeout), -1 when the connection is closed.
sub fill {
    my ($wait) = @_;
    return -1 if $closed;
    $wait = 0 if $wait < 0;
    return 0 unless $sel->can_read($wait);
    my $n = sysread($sock, my $chunk, 1 << 20);
    if (!defined $n) {
        return 0 if $! == EAGAIN || $! == EWOULDBLOCK || $! == EINTR;
        $closed = 1;
        return -1;
    }
    if ($n == 0) {
        $closed = 1;
        return -1;
    }
    $buf .= $chunk;
    return $n;
}

# End offset of the complete reply starting at $pos, undef if incomplete, -1 if malformed.
sub reply_end {
    my ($pos, $depth) = @_;
    return -1 if $depth > 64;
    my $nl = index($buf, "\r\n", $pos);
    return undef if $nl < 0;
    my $type = substr($buf, $pos, 1);
    my $line = substr($buf, $pos + 1, $nl - $pos - 1);
    my $next = $nl + 2;
    return $next if $type =~ /^[+\-:_,#(]$/;
    return -1 unless $line =~ /^-?\d+$/;
    if ($type =~ /^[\$!=]$/) {
        return $next if $line < 0;
        my $end = $next + $line + 2;
        return undef if length($buf) < $end;
        return -1 unless substr($buf, $end - 2, 2) eq "\r\n";
        return $end;
    }
    if ($type =~ /^[*~>%|]$/) {
        return $next if $line < 0;
        my $n = $line;
        $n *= 2 if $type eq '%' || $type eq '|';
        my $p = $next;
        for (1 .. $n) {
            $p = reply_end($p, $depth + 1);
            return $p if !defined $p || $p < 0;
        }
        return $type eq '|' ? reply_end($p, $depth + 1) : $p;   # attribute, then the reply
    }
    return -1;
}

sub read_replies {
    my ($count, $print) = @_;
    my $deadline = time() + $step_timeout;
    my $pos = 0;
    for (1 .. $count) {
        for (;;) {
            my $end = reply_end($pos, 0);
            if (defined $end && $end < 0) {
                $out .= escape($buf) . "<BADREPLY>";
                $buf = '';
                return 0;
            }
            if (defined $end) { $pos = $end; last; }
            my $left = $deadline - time();
            my $got = $left > 0 ? fill($left) : 0;
            if ($got < 0 || ($got == 0 && time() >= $deadline)) {
                $out .= escape($buf) . ($got < 0 ? "<EOF>" : "<TIMEOUT>") if $print;
                $out .= ($got < 0 ? "<EOF>" : "<TIMEOUT>") unless $print;
                $buf = '';
                return 0;
            }
        }
    }
    $out .= escape(substr($buf, 0, $pos)) if $print;
    substr($buf, 0, $pos) = '';
    return 1;
}

# Blocking write of all bytes (the socket is non-blocking: wait for room).
sub write_all {
    my ($bytes, $stall_secs) = @_;
    my $off = 0;
    my $stalled_since = time();
    my $wsel = IO::Select->new($sock);
    while ($off < length($bytes)) {
        my $n = syswrite($sock, $bytes, length($bytes) - $off, $off);
        if (!defined $n) {
            if ($! == EAGAIN || $! == EWOULDBLOCK || $! == EINTR) {
                return 0 if time() - $stalled_since > $stall_secs;
                $wsel->can_write(0.2);
                next;
            }
            return -1;    # EPIPE, ECONNRESET
        }
        $off += $n;
        $stalled_since = time();
    }
    return 1;
}

for my $step (@ARGV) {
    my ($op, $arg) = split /:/, $step, 2;
    $arg = '' unless defined $arg;
    if ($op eq 'send') {
        write_all(unescape($arg), 10) > 0 or $out .= "<WRITE FAILED>";
    } elsif ($op eq 'slow') {
        for my $byte (split //, unescape($arg)) {
            write_all($byte, 10) > 0 or do { $out .= "<WRITE FAILED>"; last };
            sleep(0.002);
        }
    } elsif ($op eq 'repeat') {
        my ($n, $bytes) = split /:/, $arg, 2;
        write_all(unescape($bytes) x $n, 10) > 0 or $out .= "<WRITE FAILED>";
    } elsif ($op eq 'read' || $op eq 'skip') {
        read_replies($arg, $op eq 'read');
    } elsif ($op eq 'eof') {
        my $deadline = time() + $arg;
        my $start = length($buf);
        while (!$closed && time() < $deadline) { fill($deadline - time()); }
        $out .= escape(substr($buf, $start)) . ($closed ? "<EOF>" : "<OPEN>");
        $buf = '';
    } elsif ($op eq 'quiet') {
        my $deadline = time() + $arg / 1000;
        while (!$closed && time() < $deadline) { fill($deadline - time()); }
        $out .= escape($buf);
        $buf = '';
    } elsif ($op eq 'flood') {
        my ($n, $bytes) = split /:/, $arg, 2;
        my $one = unescape($bytes);
        # in batches of about 64 kB; stop when the connection fails or stalls for 5 s
        my $per = int(65536 / length($one)) || 1;
        for (my $sent = 0; $sent < $n; $sent += $per) {
            my $k = $n - $sent < $per ? $n - $sent : $per;
            last if write_all($one x $k, 5) <= 0;
        }
    } elsif ($op eq 'gone') {
        my $deadline = time() + $arg;
        while (!$closed && time() < $deadline) {
            fill($deadline - time());
            $buf = '';
        }
        $out .= $closed ? "<GONE>" : "<ALIVE>";
    } elsif ($op eq 'timeout') {
        $step_timeout = $arg;
    } else {
        die "resp_raw.pl: unknown step '$step'\n";
    }
}
print $out, "\n";
exit 0;
