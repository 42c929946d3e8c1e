#!/usr/bin/env python3
"""tools/alerts_test.py: the alerting rules of docs/alerts/local_cache.rules.yml against the real
prometheus-redis-exporter (Debian's) scraping the RESP server of a throwaway primary and hot
standby (tools/cluster.sh). Each alert's condition is produced for real: misses, evictions (a
small local_cache.memory), a RESP worker terminated, connections past local_cache.resp_max_clients,
wrong passwords, a CLIENT TRACKING client that does not read its pushes, a standby whose replay
is paused. The exporter's /metrics is scraped before and after each; each pair of scrapes becomes
series for `promtool test rules` (one scrape a minute: a counter grows by what it grew between
the two scrapes every minute, a gauge keeps its value, uptime grows 60 s a minute), which must
show no alert on the healthy scrapes and each alert firing on its own condition. Also: `promtool
check rules`, what the scrapes show, and the SQL query docs/MONITORING.md gives for each alert.

    PG_CONFIG=... tools/alerts_test.py      (the extension installed; as root or not)

Each check prints PASS or FAIL; the last line is `N passed, N failed` (tools/test.sh: alerts).
"""
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CLUSTER = os.path.join(ROOT, 'tools', 'cluster.sh')
RULES = os.path.join(ROOT, 'docs', 'alerts', 'local_cache.rules.yml')
MONITOR_PW = 'alerts-Monitor-pw1'
CLIENT_PW = 'alerts-Client-pw1'
ALERTS = ['LocalCacheHitRatioLow', 'LocalCacheEvicting', 'LocalCacheRespWorkerRestarted',
          'LocalCacheRespConnectionsRejected', 'LocalCacheRespFailedLogins', 'LocalCacheRespPushBacklog',
          'LocalCacheStandbyCacheLag']
passed = failed = 0


def check(name, expected, actual):
    global passed, failed
    if expected == actual:
        passed += 1
        print(f'PASS {name}')
    else:
        failed += 1
        print(f'FAIL {name}\n  expected: {expected!r}\n  actual:   {actual!r}')


def run(*args, check_rc=True, **kw):
    result = subprocess.run(args, capture_output=True, text=True, timeout=180, **kw)
    if check_rc and result.returncode != 0:
        raise RuntimeError(f'{args}: exit {result.returncode}\n{result.stdout}\n{result.stderr}')
    return result.stdout


def sql(cluster, query):
    return run(CLUSTER, 'psql', cluster, '-Atq', '-v', 'ON_ERROR_STOP=1', '-c', query).strip()


def wait_for(what, seconds, predicate):
    deadline = time.time() + seconds
    while time.time() < deadline:
        if predicate():
            return True
        time.sleep(0.2)
    print(f'  (waited {seconds}s for {what})')
    return False


# ------------------------------------------------------------------------------- RESP clients

def command(*words):
    out = f'*{len(words)}\r\n'
    for w in words:
        b = str(w)
        out += f'${len(b.encode())}\r\n{b}\r\n'
    return out.encode()


def connect(port, rcvbuf=None):
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    if rcvbuf is not None:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, rcvbuf)
    s.settimeout(10)
    s.connect(('127.0.0.1', port))
    return s


def ask(s, *words):
    """Sends one command and returns its first reply line (enough for AUTH, errors, OK)."""
    s.sendall(command(*words))
    data = b''
    while b'\r\n' not in data:
        chunk = s.recv(4096)
        if not chunk:
            break
        data += chunk
    return data.split(b'\r\n')[0].decode(errors='replace')


# ------------------------------------------------------------------------------- the exporter

class Exporter:
    def __init__(self, resp_port, work, name):
        self.port = int(run(CLUSTER, 'freeport').strip())
        self.log = open(os.path.join(work, f'exporter_{name}.log'), 'w')
        env = dict(os.environ, REDIS_PASSWORD=MONITOR_PW)
        self.process = subprocess.Popen(
            ['prometheus-redis-exporter', '-redis.addr', f'redis://127.0.0.1:{resp_port}',
             '-redis.user', 'alerts_monitor', '-web.listen-address', f'127.0.0.1:{self.port}'],
            stdout=self.log, stderr=subprocess.STDOUT, env=env)

    def scrape(self):
        with urllib.request.urlopen(f'http://127.0.0.1:{self.port}/metrics', timeout=20) as reply:
            text = reply.read().decode()
        metrics = {}
        for line in text.splitlines():
            m = re.match(r'^([a-zA-Z_:][a-zA-Z0-9_:]*(?:\{[^}]*\})?) (\S+)$', line)
            if m:
                metrics[m.group(1)] = float(m.group(2))
        return metrics

    def stop(self):
        self.process.terminate()
        self.process.wait(10)
        self.log.close()


# ------------------------------------------------------------------------------- promtool input

# The series each alert reads: (metric as scraped, how it moves from one scrape a minute to the next).
SERIES = {
    'LocalCacheHitRatioLow': [('redis_keyspace_hits_total', 'counter'), ('redis_keyspace_misses_total', 'counter')],
    'LocalCacheEvicting': [('redis_evicted_keys_total', 'counter')],
    'LocalCacheRespWorkerRestarted': [('redis_uptime_in_seconds', 'clock')],
    'LocalCacheRespConnectionsRejected': [('redis_rejected_connections_total', 'counter')],
    'LocalCacheRespFailedLogins': [('redis_errors_total{err="WRONGPASS"}', 'counter')],
    'LocalCacheRespPushBacklog': [('redis_client_recent_max_output_buffer_bytes', 'gauge')],
    'LocalCacheStandbyCacheLag': [('redis_master_repl_offset', 'gauge'), ('redis_slave_repl_offset', 'gauge')],
}
HEALTHY_MINUTES = 30
CONDITION_MINUTES = 30


def extend(values, kind, before, after, minutes):
    """Appends `minutes` scrapes a minute apart that move as the metric moved from before to after."""
    if kind == 'counter':
        for _ in range(minutes):
            values.append(values[-1] + (after - before))
    elif kind == 'gauge':
        values.extend([after] * minutes)
    else:  # a clock: the scraped value, then a minute more each minute
        values.append(after)
        for _ in range(minutes - 1):
            values.append(values[-1] + 60)


def series_values(kind, healthy, condition=None):
    """healthy and condition: (value before, value after) as scraped."""
    values = [healthy[0], healthy[1]]
    extend(values, kind, healthy[0], healthy[1], HEALTHY_MINUTES - 2)
    if condition is not None:
        extend(values, kind, condition[0], condition[1], CONDITION_MINUTES)
    return ' '.join(repr(v) for v in values)


def series_name(metric, instance):
    label = f'instance="{instance}",job="local_cache"'
    return metric[:-1] + ',' + label + '}' if metric.endswith('}') else metric + '{' + label + '}'


def promtool_test(work, name, series, expectations):
    """series: [(metric, instance, values)]; expectations: [(eval minute, PromQL, [(labels, value)])]."""
    lines = [f'rule_files: [{RULES}]', 'evaluation_interval: 1m', 'tests:', '  - interval: 1m',
             '    input_series:']
    for metric, instance, values in series:
        lines += [f"      - series: '{series_name(metric, instance)}'", f"        values: '{values}'"]
    lines.append('    promql_expr_test:')
    for minute, expr, samples in expectations:
        lines += [f"      - expr: '{expr}'", f'        eval_time: {minute}m', '        exp_samples:']
        for labels, value in samples:
            lines += [f"          - labels: '{labels}'" if labels else '          - labels: \'{}\'',
                      f'            value: {value}']
    path = os.path.join(work, f'promtool_{name}.yml')
    with open(path, 'w') as f:
        f.write('\n'.join(lines) + '\n')
    result = subprocess.run(['promtool', 'test', 'rules', path], capture_output=True, text=True, timeout=60)
    if result.returncode != 0:
        print(result.stdout + result.stderr)
    return 'SUCCESS' if result.returncode == 0 else 'FAILED'


# ------------------------------------------------------------------------------- the run

def main():
    work = tempfile.mkdtemp(prefix='lc_alerts.', dir='/tmp')
    os.chmod(work, 0o755)
    primary, standby = os.path.join(work, 'p'), os.path.join(work, 's')
    exporters = []
    try:
        scenario(work, primary, standby, exporters)
    except Exception as error:  # a step that could not run: one failure, the rest not run
        check('the scenario ran to its end', 'no error', f'{type(error).__name__}: {error}')
    finally:
        for exporter in exporters:
            exporter.stop()
        keep = failed > 0 or os.environ.get('KEEP_TMP')
        for cluster in (standby, primary):
            if os.path.exists(cluster):
                run(CLUSTER, 'stop' if keep else 'destroy', cluster, check_rc=False)
        if not keep:
            shutil.rmtree(work, ignore_errors=True)
        else:
            print(f'kept {work}')
    print(f'{passed} passed, {failed} failed')
    return 0 if failed == 0 else 1


def scenario(work, primary, standby, exporters):
    check('promtool check rules', True, 'SUCCESS: 7 rules found' in run('promtool', 'check', 'rules', RULES))
    resp_port = int(run(CLUSTER, 'freeport').strip())
    run(CLUSTER, 'start', primary, 'auto', f'local_cache.resp_port = {resp_port}', "local_cache.resp_role = ''",
        'local_cache.resp_workers = 2', 'local_cache.memory = 8MB')
    run(CLUSTER, 'hba', primary, 'host all all 127.0.0.1/32 scram-sha-256', 'host replication all 127.0.0.1/32 trust')
    sql(primary, f"""
        CREATE EXTENSION local_cache;
        SET password_encryption = 'scram-sha-256';
        CREATE ROLE alerts_monitor LOGIN PASSWORD '{MONITOR_PW}';
        GRANT pg_read_all_stats TO alerts_monitor;
        CREATE ROLE alerts_client LOGIN PASSWORD '{CLIENT_PW}';
        CREATE TABLE hot (id int PRIMARY KEY, v text);
        INSERT INTO hot SELECT i, 'h' || i FROM generate_series(1, 20) i;
        CREATE TABLE cold (id int PRIMARY KEY, v text);
        INSERT INTO cold SELECT i, 'c' || i FROM generate_series(1, 4000) i;
        CREATE TABLE big (id int PRIMARY KEY, v text);
        INSERT INTO big SELECT i, repeat('b', 1000) FROM generate_series(1, 12000) i;
        CREATE TABLE pushes (id text PRIMARY KEY, v int);
        INSERT INTO pushes SELECT lpad(i::text, 900, 'k'), 0 FROM generate_series(1, 100) i;
        CREATE TABLE lag (id int PRIMARY KEY, v text);
        SELECT local_cache.enable(t) FROM unnest(ARRAY['hot', 'cold', 'big', 'pushes', 'lag']::regclass[]) t;
        GRANT SELECT ON hot, cold, big, pushes TO alerts_client;
        CREATE PROCEDURE push_changes(rounds int) LANGUAGE plpgsql AS $$
        BEGIN
            FOR r IN 1 .. rounds LOOP
                -- a condition: an UPDATE with none flushes the table, one push instead of the keys
                UPDATE pushes SET v = r WHERE v IS NOT NULL;
                COMMIT;
                -- the RESP workers keep up with the tracking log (a lapped reader would push
                -- one flush instead of the keys)
                PERFORM pg_sleep(0.01);
            END LOOP;
        END $$;""")
    standby_resp_port = int(run(CLUSTER, 'freeport').strip())
    run(CLUSTER, 'standby', primary, standby, 'auto', f'local_cache.resp_port = {standby_resp_port}')

    def answers(port):
        try:
            with connect(port) as s:
                return ask(s, 'AUTH', 'alerts_monitor', MONITOR_PW) == '+OK'
        except OSError:
            return False
    wait_for('the RESP servers', 60, lambda: answers(resp_port) and answers(standby_resp_port))
    p_exporter = Exporter(resp_port, work, 'primary')
    exporters.append(p_exporter)
    s_exporter = Exporter(standby_resp_port, work, 'standby')
    exporters.append(s_exporter)
    for exporter in (p_exporter, s_exporter):
        wait_for('the exporter', 30, lambda e=exporter: safe_scrape(e).get('redis_up') == 1.0)

    def hits(n):  # reads of the same few rows: cached after the first
        sql(primary, f"SELECT count(local_cache.mget('hot', ARRAY[1,2,3,4,5])) FROM generate_series(1, {n})")

    # Healthy: reads that hit, nothing else. Two scrapes around it.
    hits(1)
    scrapes = [p_exporter.scrape()]
    hits(200)
    time.sleep(1.5)  # uptime moves on
    scrapes.append(p_exporter.scrape())
    healthy = (scrapes[0], scrapes[1])
    conditions = {}

    def around(alert, produce):
        before = p_exporter.scrape()
        produce()
        conditions[alert] = (before, p_exporter.scrape())

    # Misses: 4000 rows read once each, and as many hits as in the healthy minute.
    around('LocalCacheHitRatioLow', lambda: (
        sql(primary, "SELECT count(local_cache.mget('cold', ARRAY[i])) FROM generate_series(1, 4000) i"), hits(200)))
    check('SQL: the hit ratio over every database (stats_global) has fallen below 0.8', 't',
          sql(primary, 'SELECT hits::numeric / nullif(hits + misses, 0) < 0.8 FROM local_cache.stats_global'))

    # Evictions: 12 MB of rows through an 8 MB cache.
    around('LocalCacheEvicting', lambda: sql(
        primary, "SELECT count(local_cache.mget('big', ARRAY(SELECT generate_series(i, i + 99)))) "
                 "FROM generate_series(1, 12000, 100) i"))
    check('SQL: local_cache.stats_global counts evictions', 't',
          sql(primary, 'SELECT evictions > 0 FROM local_cache.stats_global'))

    # A worker terminated: the launcher starts it again (after 5 s).
    def restart_worker():
        old = sql(primary, "SELECT pid FROM pg_stat_activity WHERE backend_type = 'local_cache RESP worker' "
                           "ORDER BY pid LIMIT 1")
        sql(primary, f'SELECT pg_terminate_backend({old})')
        wait_for('the worker started again', 30, lambda: sql(
            primary, "SELECT count(*) FROM pg_stat_activity WHERE backend_type = 'local_cache RESP worker' "
                     f"AND pid <> {old}") == '2')
    around('LocalCacheRespWorkerRestarted', restart_worker)
    before, after = conditions['LocalCacheRespWorkerRestarted']
    check('the exporter shows uptime going back after the restart', True,
          after['redis_uptime_in_seconds'] < before['redis_uptime_in_seconds'])
    check('SQL: local_cache.resp_server counts the restart, at the new worker\'s backend_start', '1|t',
          sql(primary, "SELECT worker_restarts, abs(extract(epoch FROM last_worker_start - (SELECT max(backend_start) "
                       "FROM pg_stat_activity WHERE backend_type LIKE 'local_cache RESP%worker'))) < 1 "
                       "FROM local_cache.resp_server"))

    # Connections past local_cache.resp_max_clients.
    def reject():
        sql(primary, 'ALTER SYSTEM SET local_cache.resp_max_clients = 3')
        sql(primary, 'SELECT pg_reload_conf()')
        time.sleep(1.5)  # the workers reload at once (SIGHUP)
        held, refused = [], []
        for _ in range(8):
            s = connect(resp_port)
            (held if ask(s, 'AUTH', 'alerts_client', CLIENT_PW) == '+OK' else refused).append(s)
        for s in held + refused:
            s.close()
        sql(primary, 'ALTER SYSTEM RESET local_cache.resp_max_clients')
        sql(primary, 'SELECT pg_reload_conf()')
        time.sleep(1.5)
    around('LocalCacheRespConnectionsRejected', reject)
    check('SQL: local_cache.resp_server counts the rejected connections', 't',
          sql(primary, 'SELECT rejected_connections > 0 FROM local_cache.resp_server'))

    # Wrong passwords.
    def wrong_passwords():
        for _ in range(20):
            with connect(resp_port) as s:
                ask(s, 'AUTH', 'alerts_client', 'not-the-password')
    around('LocalCacheRespFailedLogins', wrong_passwords)
    check('SQL: local_cache.resp_errors counts the failed logins', '20',
          sql(primary, "SELECT sum(count) FROM local_cache.resp_errors WHERE error = 'WRONGPASS'"))

    # A CLIENT TRACKING client that does not read its pushes (a small receive buffer).
    tracker = connect(resp_port, rcvbuf=4096)

    def backlog():
        tracker.sendall(command('HELLO', '3', 'AUTH', 'alerts_client', CLIENT_PW))
        tracker.sendall(command('CLIENT', 'TRACKING', 'ON', 'BCAST', 'PREFIX', 'pushes:'))
        time.sleep(0.2)
        sql(primary, 'CALL push_changes(150)')
        largest = lambda: int(sql(primary, 'SELECT largest_output_buffer FROM local_cache.resp_server'))
        wait_for('the push backlog', 20, lambda: largest() > 2 * 1048576)
        time.sleep(1.2)  # the worker's next second
    around('LocalCacheRespPushBacklog', backlog)
    check('SQL: local_cache.resp_server shows the unread pushes (largest_output_buffer over 1 MB)', 't',
          sql(primary, 'SELECT largest_output_buffer > 1048576 FROM local_cache.resp_server'))
    tracker.close()

    # The standby: healthy, then its replay paused while the primary writes 32 MB of WAL.
    standby_healthy = (s_exporter.scrape(), None)
    time.sleep(1)
    standby_healthy = (standby_healthy[0], s_exporter.scrape())
    sql(standby, 'SELECT pg_wal_replay_pause()')
    wal_start = sql(primary, 'SELECT pg_current_wal_lsn()')
    sql(primary, "INSERT INTO lag SELECT i, repeat('w', 500) FROM generate_series(1, 50000) i")
    wait_for('the standby received the WAL', 60, lambda: sql(
        standby, f"SELECT pg_wal_lsn_diff(pg_last_wal_receive_lsn(), '{wal_start}') > 16 * 1048576") == 't')
    standby_condition = (standby_healthy[1], s_exporter.scrape())
    check('SQL: the standby replays (and invalidates) more than 16 MB behind what it received', 't',
          sql(standby, 'SELECT pg_wal_lsn_diff(pg_last_wal_receive_lsn(), pg_last_wal_replay_lsn()) > 16 * 1048576'))
    sql(standby, 'SELECT pg_wal_replay_resume()')

    # The rules, fed the scrapes.
    def scraped(metric, first, second):
        """The series of `metric` (a name, and labels it must have) in both scrapes: its full name
        as the exporter wrote it (master_host and master_port labels too), its two values."""
        name, _, labels = metric.partition('{')
        wanted = [label for label in labels.rstrip('}').split(',') if label]
        for key in sorted(second):
            key_name, _, key_labels = key.partition('{')
            if key_name == name and all(label in key_labels for label in wanted):
                return key, (first.get(key, 0.0), second[key])
        return metric, (0.0, 0.0)

    def all_series(with_condition=None):
        out = []
        for alert, metrics in SERIES.items():
            standby_alert = alert == 'LocalCacheStandbyCacheLag'
            h = standby_healthy if standby_alert else healthy
            c = None
            if alert == with_condition:
                c = standby_condition if standby_alert else conditions[alert]
            for metric, kind in metrics:
                key, healthy_values = scraped(metric, *h)
                condition_values = scraped(key, *c)[1] if c else None
                out.append((key, 'standby' if standby_alert else 'primary',
                            series_values(kind, healthy_values, condition_values)))
        return out

    def labels_of(alert):  # the labels the alert keeps from its metric
        key = scraped(SERIES[alert][0][0], *(standby_healthy if alert == 'LocalCacheStandbyCacheLag' else healthy))[0]
        return [label for label in key.partition('{')[2].rstrip('}').split(',')
                if label and alert != 'LocalCacheStandbyCacheLag']

    end = HEALTHY_MINUTES + CONDITION_MINUTES - 1
    quiet = HEALTHY_MINUTES - 1
    for alert in ALERTS:
        never = f'count(max_over_time(ALERTS{{alertname="{alert}"}}[{quiet}m])) or vector(0)'
        check(f'{alert}: never pending or firing on the healthy scrapes', 'SUCCESS', promtool_test(
            work, f'healthy_{alert}', all_series(), [(quiet, never, [('', 0)])]))
        instance = 'standby' if alert == 'LocalCacheStandbyCacheLag' else 'primary'
        labels = sorted([f'alertname="{alert}"', 'alertstate="firing"', f'instance="{instance}"',
                         'job="local_cache"', 'severity="warning"'] + labels_of(alert))
        check(f'{alert}: firing on its condition', 'SUCCESS', promtool_test(
            work, alert, all_series(alert),
            [(quiet, never, [('', 0)]),
             (end, f'max_over_time(ALERTS{{alertname="{alert}",alertstate="firing"}}[{CONDITION_MINUTES}m])',
              [('{' + ','.join(labels) + '}', 1)])]))
    for name, exporter in (('primary', p_exporter), ('standby', s_exporter)):
        exporter.log.flush()
        with open(exporter.log.name) as f:
            problems = [line for line in f if re.search(r'level=(error|warning|fatal)', line)]
        check(f'the {name} exporter logged no error', [], problems)


def safe_scrape(exporter):
    try:
        return exporter.scrape()
    except OSError:
        return {}


if __name__ == '__main__':
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(1))
    sys.exit(main())
