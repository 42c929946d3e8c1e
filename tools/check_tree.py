#!/usr/bin/env python3
"""tools/check_tree.py: owns the rules of the source tree that the compiler does not check.

    tools/check_tree.py [ROOT]        check the tree (default: this checkout); exit 1 on a violation
    tools/check_tree.py --self-test   break each rule in a copy of the tree and show the check fails

Rules (docs/TECHNICAL.md, "Layers"):
  includes   one include root: project headers are named from the top of the tree
             ("extension/fetch.h"), never with "../", and the named file exists
  layers     what each folder may include (LAYERS below): resp_server/protocol/, commands/,
             clients/ and the unit tests are free of PostgreSQL and libuv, net/ (the transport)
             of PostgreSQL; beside them only the worker's main includes the transport
             (TRANSPORT_USERS); the core includes nothing from its front ends
  cycles     the folders include one another one way: no cycle in the graph the #include lines
             make of them (resp_server/: its top -> clients/ -> net/, auth/ -> pg/ -> commands/)
  pg-free    what those PostgreSQL-free (libuv-free) folders reach is too: every project file
             they include and the .cpp beside each such header, followed to the end (the
             PostgreSQL-free set, which no list names; the Makefile builds the unit tests from it);
             libuv stays behind net/'s headers: its .cpp files may use it (UV_BEHIND)
  readmes    every folder's README.md lists each of its files and sub-folders in its
             `| file | ... |` table, and lists nothing that is not there
  size       no tracked source file has more than 800 lines, nor a doc of docs/ but the generated
             docs/BENCHMARKS.md (split by concern; docs/TECHNICAL.md maps them)
  boundary   every function PostgreSQL or libuv calls is registered through a named wrapper
             (docs/TECHNICAL.md, "C++ inside PostgreSQL"): hooks, callbacks, FDW routines, the
             rmgr, dynahash functions and tree walkers name pg_entry<f>; functions PostgreSQL
             finds by name (PG_FUNCTION_INFO_V1, bgw_function_name, _PG_init) are defined by the
             macros of extension/boundary.h; libuv callbacks name uv_callback<f> or
             connection_callback<f> (resp_server/net/callback.h)
  definer    every SECURITY DEFINER function the SQL scripts leave behind (the last definition of
             each name, after renames and drops, in version order) sets search_path = pg_catalog,
             pg_temp: otherwise a caller's temporary table or type answers for a catalog's
  paths      every file a README, SECURITY.md, docs/*.md or CHANGELOG.md's unreleased sections
             name, and every .cpp file or path a C++ comment names, is in the tree (a glob matches
             a file; build outputs, named in a .gitignore, count): a name that went stale fails;
             a link to a Markdown file, or a docs/X.md#anchor, names one of the tree's and a heading
             of it (tools/check_prose.py)
Each rule prints one `ok - ...` or `not ok - ...` line; the last line is `N passed, N failed`.
"""
import os
import re
import shutil
import subprocess
import sys
import tempfile

import check_prose  # beside this file: the paths rule

MAX_LINES = 800
SOURCE_SUFFIXES = ('.c', '.cpp', '.h', '.py', '.go', '.js', '.mjs', '.sh', '.pl', '.pm', '.sql', '.spec')
SOURCE_NAMES = ('Makefile', 'run', 'report', 'rules')
# Docs bound like sources, but for the generated report (bench/report writes it whole).
GENERATED_DOCS = ('docs/BENCHMARKS.md',)

# Headers that mean "PostgreSQL" or "libuv" wherever they are included.
PG_HEADERS = ('postgres.h', 'postgres_fe.h', 'extension/pg.h', 'fmgr.h')
UV_HEADERS = ('uv.h',)

# folder -> (may include PostgreSQL, may include libuv, project folders or files it may include;
# None: any). A file is ruled by the longest folder that contains it. A folder that may not
# include PostgreSQL (or libuv) holds what it reaches to the same rule: the pg-free check below.
LAYERS = {
    'extension': (True, False, ('extension/',)),
    'extension/tests': (False, False, ('extension/',)),
    'fdw': (True, False, ('extension/', 'fdw/')),
    'resp_server': (True, False, None),
    'resp_server/protocol': (False, False, ('resp_server/protocol/', 'extension/')),
    'resp_server/commands': (False, False, ('resp_server/protocol/', 'resp_server/commands/', 'extension/')),
    'resp_server/net': (False, True, ('resp_server/net/', 'resp_server/protocol/')),
    'resp_server/clients': (False, False, ('resp_server/clients/', 'resp_server/net/', 'resp_server/commands/',
                                           'resp_server/protocol/', 'extension/')),
    'resp_server/pg': (True, False, ('extension/', 'resp_server/protocol/', 'resp_server/commands/',
                                     'resp_server/pg/')),
    'resp_server/auth': (True, False, ('extension/', 'resp_server/commands/', 'resp_server/auth/',
                                       'resp_server/pg/')),
    'resp_server/tests': (False, False, ('resp_server/', 'extension/', 'tools/lib/')),
}

# libuv-free code may reach net/'s headers (which include no libuv), not the libuv of its .cpp files.
UV_BEHIND = 'resp_server/net/'
# Outside the transport, the clients on it and the tests, only the worker's main includes them.
TRANSPORT_HEADERS, TRANSPORT_USERS = ('resp_server/net/', 'resp_server/clients/server.h'), ('resp_server/worker.cpp',)
TRANSPORT_FOLDERS = ('resp_server/net/', 'resp_server/clients/', 'resp_server/tests/')

# Folders that must have a README.md with a file table (and any other folder that has one).
README_FOLDERS = ('extension', 'fdw', 'resp_server', 'resp_server/protocol', 'resp_server/commands',
                  'resp_server/net', 'resp_server/clients', 'resp_server/pg', 'resp_server/auth', 'sql', 'tools',
                  'bench', 'regress')

INCLUDE = re.compile(r'^\s*#\s*include\s*([<"])([^">]+)[">]', re.M)


def tracked_files(root):
    """The tree's files: git's list when it is a checkout, else every file but build output."""
    try:
        out = subprocess.run(['git', '-C', root, 'ls-files', '-z'], capture_output=True, check=True).stdout
        files = [f for f in out.decode().split('\0') if f]
        if files:
            return sorted(f for f in files if os.path.exists(os.path.join(root, f)))
    except (OSError, subprocess.CalledProcessError):
        pass
    skip = re.compile(r'(^|/)(\.git|node_modules|tmp_check|\.unittest)(/|$)|^regress/(results|output|output_isolation)/'
                      r'|\.(o|d|so|bc)$')
    found = []
    for dirpath, dirnames, filenames in os.walk(root):
        for name in filenames:
            rel = os.path.relpath(os.path.join(dirpath, name), root)
            if not skip.search(rel):
                found.append(rel)
    return sorted(found)


def layer_of(path):
    best = None
    for folder in LAYERS:
        if path.startswith(folder + '/') and (best is None or len(folder) > len(best)):
            best = folder
    return best


def check_includes(root, files):
    problems = []
    fileset = set(files)
    for f in files:
        if not f.endswith(('.cpp', '.h')) or not f.startswith(('extension/', 'fdw/', 'resp_server/', 'local_cache')):
            continue
        text = open(os.path.join(root, f), errors='replace').read()
        for kind, name in INCLUDE.findall(text):
            if kind != '"':
                continue
            if '../' in name or name.startswith('./'):
                problems.append(f'{f}: #include "{name}" (name project headers from the top of the tree)')
            elif '/' in name and name.split('/')[0] in ('extension', 'fdw', 'resp_server', 'tools') \
                    and name not in fileset:
                problems.append(f'{f}: #include "{name}": no such file in the tree')
            elif '/' not in name and name not in PG_HEADERS and os.path.exists(
                    os.path.join(root, os.path.dirname(f), name)):
                problems.append(f'{f}: #include "{name}" (name it from the top of the tree: '
                                f'"{os.path.join(os.path.dirname(f), name)}")')
    return problems


def check_layers(root, files):
    problems = []
    fileset = set(files)
    for f in files:
        if not f.endswith(('.cpp', '.h')):
            continue
        layer = layer_of(f)
        if layer is None:
            continue
        pg_ok, uv_ok, allowed = LAYERS[layer]
        text = open(os.path.join(root, f), errors='replace').read()
        for kind, name in INCLUDE.findall(text):
            where = f'{f} ({layer}/)'
            if not pg_ok and (name in PG_HEADERS or name.endswith('/pg.h')):
                problems.append(f'{where} includes {name}: this layer is PostgreSQL-free')
            elif not uv_ok and name in UV_HEADERS:
                problems.append(f'{where} includes <{name}>: this layer is libuv-free')
            elif kind == '"' and name in fileset and allowed is not None and not name.startswith(allowed):
                problems.append(f'{where} includes "{name}", outside what it may include')
            elif kind == '"' and name not in fileset and not pg_ok and '/' in name:
                problems.append(f'{where} includes "{name}" (a PostgreSQL header?): this layer is PostgreSQL-free')
            elif kind == '"' and name.startswith(TRANSPORT_HEADERS) and not f.startswith(TRANSPORT_FOLDERS) \
                    and f not in TRANSPORT_USERS:
                problems.append(f'{f} includes "{name}": only {", ".join(TRANSPORT_USERS)} knows both PostgreSQL '
                                f'and the transport')
    return problems


def readme_entries(text):
    """The names in the first column of the README's `| file | ... |` table."""
    names, in_table = set(), False
    for line in text.splitlines():
        cells = [c.strip() for c in line.strip().strip('|').split('|')] if line.startswith('|') else None
        if cells is None:
            in_table = False
            continue
        if cells[0].lower() == 'file':
            in_table = True
            continue
        if not in_table or set(cells[0]) <= set('-: '):
            continue
        for token in re.findall(r'`([^`]+)`', cells[0]):
            m = re.match(r'^(.*)\{([^}]*)\}(.*)$', token)
            if m:
                names.update(m.group(1) + part + m.group(3) for part in m.group(2).split(','))
            else:
                names.add(token)
    return names


def check_readmes(root, files):
    problems = []
    folders = set(README_FOLDERS) | {os.path.dirname(f) for f in files if f.endswith('/README.md')}
    for folder in sorted(folders):
        readme = os.path.join(folder, 'README.md')
        if readme not in files:
            problems.append(f'{folder}/ has no README.md with its file table')
            continue
        listed = readme_entries(open(os.path.join(root, readme)).read())
        if not listed:
            problems.append(f'{readme}: no `| file | ... |` table')
            continue
        present, fileset = set(), set(files)
        for f in files:
            if f.startswith(folder + '/'):
                rest = f[len(folder) + 1:]
                present.add(rest.split('/')[0] + '/' if '/' in rest else rest)
        present = {name for name in present if name != 'README.md' and not name.startswith('.')}
        # `sub/file` in the table stands for the sub-folder too (a folder of one or two files).
        covered = listed | {name.split('/')[0] + '/' for name in listed if '/' in name.rstrip('/')}
        for name in sorted(present - covered):
            problems.append(f'{readme}: `{name}` is in the folder but not in the table')
        for name in sorted(listed):
            if name not in present and f'{folder}/{name}' not in fileset:
                problems.append(f'{readme}: lists `{name}`, which is not in the folder')
    return problems


def check_size(root, files):
    problems = []
    for f in files:
        base = os.path.basename(f)
        doc = os.path.dirname(f) == 'docs' and f.endswith('.md') and f not in GENERATED_DOCS
        if not (f.endswith(SOURCE_SUFFIXES) or base in SOURCE_NAMES or doc):
            continue
        with open(os.path.join(root, f), 'rb') as fh:
            lines = fh.read().count(b'\n')
        if lines > MAX_LINES:
            problems.append(f'{f}: {lines} lines (at most {MAX_LINES}: split it by what it does)')
    return problems


# ----------------------------------------------------------------- pg-free

def project_includes(root, f, fileset):
    """The tree's files that f names in a quoted #include."""
    text = open(os.path.join(root, f), errors='replace').read()
    return [name for kind, name in INCLUDE.findall(text) if kind == '"' and name in fileset]


def reached(root, files, seeds):
    """seeds, every tree file they include, and the .cpp beside each header among them (it is
    compiled with them), followed to the end: what a build from the seeds compiles. Returns each
    reached file -> the file that brought it in (None for a seed). The Makefile's `reach` is the
    same walk."""
    fileset = set(files)
    parent = {f: None for f in seeds}
    todo = list(seeds)
    while todo:
        f = todo.pop()
        nexts = project_includes(root, f, fileset)
        if f.endswith('.h') and f[:-2] + '.cpp' in fileset:
            nexts.append(f[:-2] + '.cpp')
        for name in nexts:
            if name not in parent:
                parent[name] = f
                todo.append(name)
    return parent


def check_cycles(root, files):
    fileset, edges = set(files), {}  # folder -> {folder it includes: the first include that does}
    for f in (f for f in files if f.endswith(('.cpp', '.h'))):
        for name in project_includes(root, f, fileset):
            if os.path.dirname(name) != os.path.dirname(f):
                edges.setdefault(os.path.dirname(f), {}).setdefault(os.path.dirname(name), f'{f} includes "{name}"')

    def way(start, goal):  # the folders of a shortest path from start to goal, or None
        ways, todo = {start: [start]}, [start]
        while todo:
            node = todo.pop(0)
            for nxt in sorted(edges.get(node, ())):
                if nxt == goal:
                    return ways[node] + [goal]
                if nxt not in ways:
                    ways[nxt], todo = ways[node] + [nxt], todo + [nxt]
        return None

    problems, seen = [], set()
    for folder in sorted(edges):
        cycle = None if folder in seen else way(folder, folder)
        if cycle:  # folder and every folder on a way there and back: one knot, reported once
            knot = [f for f in sorted(edges) if way(folder, f) and way(f, folder)]
            seen.update(knot)
            problems.append(', '.join(k + '/' for k in knot) + ' include one another; one cycle: ' +
                            ' -> '.join(c + '/' for c in cycle) + ' (' +
                            '; '.join(edges[a][b] for a, b in zip(cycle, cycle[1:])) + ')')
    return problems


def chain(parent, f):
    names = [f]
    while parent[names[-1]] is not None:
        names.append(parent[names[-1]])
    return ' <- '.join(names)


def check_pg_free(root, files):
    """The PostgreSQL-free set is a folder rule, not a list (docs/TECHNICAL.md, "Layers"): a
    folder of LAYERS that may not include PostgreSQL (or libuv) holds every file it reaches to the
    same rule, but for the libuv net/'s .cpp files use behind its headers (UV_BEHIND). The
    folders' own files are the layers check's."""
    problems = []
    fileset = set(files)
    sources = [f for f in files if f.endswith(('.cpp', '.h'))]
    for index, what in ((0, 'PostgreSQL'), (1, 'libuv')):
        seeds = [f for f in sources if layer_of(f) is not None and not LAYERS[layer_of(f)][index]]
        parent = reached(root, files, seeds)
        offending = {}  # reached file -> what it includes that it may not
        for f in set(parent) - set(seeds):
            if index and f.startswith(UV_BEHIND) and f.endswith('.cpp'):
                continue  # libuv behind the transport's headers
            text = open(os.path.join(root, f), errors='replace').read()
            names = [name for kind, name in INCLUDE.findall(text)
                     if (name in UV_HEADERS if index else
                         name in PG_HEADERS or (kind == '"' and '/' in name and name not in fileset))]
            if names:
                offending[f] = names
        for f in sorted(offending):
            # Only the first such file on its path: what it brings in says nothing more.
            up = parent[f]
            while up is not None and up not in offending:
                up = parent[up]
            if up is None:
                problems.append(f'{f} includes {", ".join(offending[f])}, but {what}-free code reaches it '
                                f'({chain(parent, f)})')
    return problems


# ------------------------------------------------------------------- paths

def check_paths(root, files):
    """Names of the tree's files, and links to its Markdown headings, in prose resolve
    (tools/check_prose.py)."""
    return check_prose.check_paths(root, files, PG_HEADERS + UV_HEADERS, COMMENTS)


# ---------------------------------------------------------------- boundary

# Where the wrappers are defined: the only files that may write PG_FUNCTION_INFO_V1 and PGDLLEXPORT.
BOUNDARY_HEADERS = ('extension/boundary.h', 'resp_server/net/callback.h')
PG_WRAPPER = re.compile(r'^(local_cache::)?pg_entry<.+>$', re.S)
UV_WRAPPER = re.compile(r'^(local_cache::resp::)?(uv_callback|connection_callback)<.+>$', re.S)
NO_FUNCTION = ('nullptr', 'NULL', '0')
# PostgreSQL calls that register a function: name -> position of the function among the arguments.
PG_REGISTRATIONS = {
    'RegisterXactCallback': 0, 'RegisterSubXactCallback': 0, 'RegisterResourceReleaseCallback': 0,
    'CacheRegisterRelcacheCallback': 0, 'CacheRegisterSyscacheCallback': 1, 'on_shmem_exit': 0,
    'before_shmem_exit': 0, 'on_proc_exit': 0, 'cancel_before_shmem_exit': 0,
    'RegisterExprContextCallback': 1, 'as_callback': 0,
}
# libuv calls that take callbacks: name -> positions of the callbacks among the arguments.
UV_REGISTRATIONS = {
    'uv_read_start': (1, 2), 'uv_close': (1,), 'uv_timer_start': (1,), 'uv_prepare_start': (1,),
    'uv_check_start': (1,), 'uv_idle_start': (1,), 'uv_async_init': (2,), 'uv_signal_start': (1,),
    'uv_signal_start_oneshot': (1,), 'uv_poll_start': (2,), 'uv_listen': (2,), 'uv_write': (4,),
    'uv_write2': (5,), 'uv_walk': (1,), 'uv_shutdown': (2,), 'uv_queue_work': (2, 3),
    'uv_tcp_connect': (3,), 'uv_getaddrinfo': (2,), 'uv_getnameinfo': (2,), 'uv_fs_event_start': (1,),
    'uv_fs_poll_start': (1,), 'uv_udp_recv_start': (1, 2), 'uv_udp_send': (5,), 'uv_thread_create': (1,),
}
# Assignments that hand PostgreSQL a function: `X_hook = f`, `routine->Foo = f`, `ctl.hash = f`,
# `*func = f` (an FDW's AcquireSampleRowsFunc).
PG_ASSIGNMENTS = re.compile(r'(?<![\w.>])((?!prev_)\w+_hook|routine->\w+|\w+\.(?:hash|match|keycopy|alloc)|\*\s*func)'
                            r'\s*=\s*([^;=][^;]*);')
RMGR = re.compile(r'\bRmgrData\s+\w+\s*=\s*\{([^;]*)\};')
COMMENTS = re.compile(r'//[^\n]*|/\*.*?\*/', re.S)


TEMPLATE_NAMES = re.compile(r'(pg_entry|uv_callback|connection_callback|as_callback|_cast)\s*$')


def call_arguments(text, open_paren):
    """The top-level arguments of the call whose '(' is at open_paren ('<' counts as a bracket
    only after the names of the wrappers and casts)."""
    closing = {'(': ')', '[': ']', '{': '}', '<': '>'}
    args, stack, start, i = [], [], open_paren + 1, open_paren
    while i < len(text):
        ch = text[i]
        if ch == '"':
            end = text.find('"', i + 1)
            i = len(text) if end < 0 else end
        elif ch in '([{' or (ch == '<' and TEMPLATE_NAMES.search(text[max(0, i - 40):i])):
            stack.append(ch)
        elif stack and ch == closing[stack[-1]]:
            stack.pop()
            if not stack:
                args.append(text[start:i].strip())
                return [a for a in args if a], i
        elif ch == ',' and len(stack) == 1:
            args.append(text[start:i].strip())
            start = i + 1
        i += 1
    return [a for a in args if a], i


def check_boundary(root, files):
    problems = []
    sources = [f for f in files if f.endswith(('.cpp', '.h')) and '/tests/' not in f
               and (f.startswith(('extension/', 'fdw/', 'resp_server/')) or f == 'local_cache.cpp')]
    texts = {f: COMMENTS.sub(' ', open(os.path.join(root, f), errors='replace').read()) for f in sources}
    defined = {}  # name PostgreSQL finds -> the macro that defines it
    for f, text in texts.items():
        for macro, name in re.findall(r'\b(LOCAL_CACHE_V1_FUNCTION|LOCAL_CACHE_WORKER_MAIN)\(\s*(\w+)', text):
            defined[name] = macro
        if re.search(r'\bLOCAL_CACHE_MODULE_INIT\(', text):
            defined['_PG_init'] = 'LOCAL_CACHE_MODULE_INIT'

    def wrapped(f, what, function, wrapper, assigned=False):
        if assigned and re.search(r'\w\s*\(.*\)$', function, re.S) and not wrapper.match(function):
            return  # a call's value (`entry.hash = hash_of(key)`), not a function
        if function not in NO_FUNCTION and not wrapper.match(function):
            problems.append(f'{f}: {what} registers {function}, not a wrapper '
                            f'({"pg_entry<f>" if wrapper is PG_WRAPPER else "uv_callback<f> / connection_callback<f>"})')

    for f, text in texts.items():
        if f in BOUNDARY_HEADERS:
            continue
        for name in re.findall(r'\bPG_FUNCTION_INFO_V1\(\s*(\w+)', text):
            problems.append(f'{f}: PG_FUNCTION_INFO_V1({name}): define it with LOCAL_CACHE_V1_FUNCTION, '
                            f'so its body runs through pg_entry')
        for m in re.finditer(r'\bPGDLLEXPORT\b[^;{]*?(\w+)\s*\(|\b(_PG_init)\s*\(', text):
            problems.append(f'{f}: {m.group(1) or m.group(2)} is exported by hand: define it with a macro of '
                            f'extension/boundary.h, so its body runs through pg_entry')
        for m in re.finditer(r'extern\s+"C"\s+(?!\{)[^;{()]*?\b(\w+)\s*\([^;{]*\)\s*\{', text):
            problems.append(f'{f}: {m.group(1)} is defined with C linkage by hand: define it with a macro of '
                            f'extension/boundary.h, so its body runs through pg_entry')
        if 'bgw_function_name' in text:
            for name in re.findall(r'"(\w+_main)"', text):
                if defined.get(name) != 'LOCAL_CACHE_WORKER_MAIN':
                    problems.append(f'{f}: background worker "{name}" is not defined by LOCAL_CACHE_WORKER_MAIN')
        for m in PG_ASSIGNMENTS.finditer(text):
            wrapped(f, m.group(1).replace(' ', ''), m.group(2).strip(), PG_WRAPPER, assigned=True)
        for m in RMGR.finditer(text):
            args, _ = call_arguments('(' + m.group(1) + ')', 0)
            for function in args[1:]:
                wrapped(f, 'RmgrData', function, PG_WRAPPER)
        for m in re.finditer(r'\b(\w+)\s*(?:<[^;(){}]*>)?\s*\(', text):
            name = m.group(1)
            if name in PG_REGISTRATIONS or name in UV_REGISTRATIONS:
                # not the definition or declaration of a function of that name
                if re.search(r'(\w|\*|&)\s+$', text[max(0, m.start() - 40):m.start()]) and \
                        not re.search(r'(return|else|=|,|\()\s+$', text[max(0, m.start() - 40):m.start()]):
                    continue
                args, _ = call_arguments(text, m.end() - 1)
                positions = (PG_REGISTRATIONS[name],) if name in PG_REGISTRATIONS else UV_REGISTRATIONS[name]
                for at in positions:
                    if at < len(args):
                        wrapped(f, name, args[at], PG_WRAPPER if name in PG_REGISTRATIONS else UV_WRAPPER)
            elif name.startswith('uv_') and re.search(r'\[[^\]]*\]\s*\(', text[m.end():m.end() + 400].split(';')[0]):
                problems.append(f'{f}: {name}(...) is handed a lambda: register a named uv_callback<f>')
    for sql in (f for f in files if f.startswith('sql/') and f.endswith('.sql')):
        text = open(os.path.join(root, sql), errors='replace').read()
        for name in sorted(set(re.findall(r"'MODULE_PATHNAME'\s*,\s*'(\w+)'", text))):
            if defined.get(name) != 'LOCAL_CACHE_V1_FUNCTION':
                problems.append(f'{sql}: C function {name} is not defined by LOCAL_CACHE_V1_FUNCTION')
    return problems


# ----------------------------------------------------------------- definer

PINNED_PATH = re.compile(r'\bSET\s+search_path\s*=\s*pg_catalog\s*,\s*pg_temp\b', re.I)
SQL_STATEMENTS = re.compile(
    r'CREATE\s+(?:OR\s+REPLACE\s+)?FUNCTION\s+(?P<created>[\w.]+)\s*\((?P<header>.*?)\bAS\b'
    r'|ALTER\s+FUNCTION\s+(?P<renamed>[\w.]+)\s*\([^)]*\)\s*RENAME\s+TO\s+(?P<new_name>\w+)'
    r'|DROP\s+FUNCTION\s+(?:IF\s+EXISTS\s+)?(?P<dropped>[\w.]+)', re.S | re.I)


def script_version(path):
    """The version a script leaves: local_cache--1.3--1.4.sql -> (1, 4)."""
    return tuple(int(n) for n in re.findall(r'--(\d+(?:\.\d+)*)', os.path.basename(path))[-1].split('.'))


def check_definer(root, files):
    scripts = sorted((f for f in files if re.fullmatch(r'sql/[\w-]+--[\d.]+(--[\d.]+)?\.sql', f)), key=script_version)
    definers = {}  # function name -> the script that last made it SECURITY DEFINER without the path
    for f in scripts:
        with open(os.path.join(root, f)) as fh:
            text = re.sub(r'--[^\n]*|/\*.*?\*/', '', fh.read(), flags=re.S)
        for m in SQL_STATEMENTS.finditer(text):
            if m.group('created'):
                name, header = m.group('created'), m.group('header')
                definers.pop(name, None)
                if re.search(r'\bSECURITY\s+DEFINER\b', header, re.I) and not PINNED_PATH.search(header):
                    definers[name] = f
            elif m.group('renamed'):
                old = m.group('renamed')
                if old in definers:
                    definers[old.rsplit('.', 1)[0] + '.' + m.group('new_name') if '.' in old else m.group('new_name')] = \
                        definers.pop(old)
            else:
                definers.pop(m.group('dropped'), None)
    return [f'{where}: {name} is SECURITY DEFINER without SET search_path = pg_catalog, pg_temp'
            for name, where in sorted(definers.items())]


CHECKS = (('includes', check_includes), ('layers', check_layers), ('cycles', check_cycles), ('readmes', check_readmes),
          ('size', check_size), ('boundary', check_boundary), ('definer', check_definer),
          ('pg-free', check_pg_free), ('paths', check_paths))


def run_checks(root, quiet=False, only=None):
    files = tracked_files(root)
    failed = []
    for name, check in CHECKS:
        if only is not None and name != only:
            continue
        problems = check(root, files)
        if problems:
            failed.append(name)
        if not quiet:
            print(('not ok - ' if problems else 'ok - ') + name)
            for p in problems:
                print('    ' + p)
    return failed


# --------------------------------------------------------------------------- self-test

def append(path, text):
    with open(path, 'a') as fh:
        fh.write(text)


def replace(path, old, new):
    """Replaces text that must be there: a breakage that changes nothing proves nothing."""
    with open(path) as fh:
        text = fh.read()
    if old not in text:
        raise ValueError(f'{path} no longer has {old!r}: update the self-test')
    with open(path, 'w') as fh:
        fh.write(text.replace(old, new, 1))


def unreleased(path, text):
    """Puts text in a new unreleased section at the top of the CHANGELOG."""
    with open(path) as fh:
        old = fh.read()
    at = re.search(r'(?m)^## ', old).start()
    with open(path, 'w') as fh:
        fh.write(old[:at] + f'## 9.0 — unreleased\n\n{text}\n\n' + old[at:])


# (what is broken, the check that must catch it, how to break it in the copy ROOT)
BREAKAGES = (
    ('an include with ../', 'includes',
     lambda r: append(f'{r}/resp_server/commands/glob.cpp', '#include "../protocol/reply.h"\n')),
    ('a header named from its own folder', 'includes',
     lambda r: append(f'{r}/resp_server/commands/glob.cpp', '#include "command_context.h"\n')),
    ('postgres.h in protocol/', 'layers',
     lambda r: append(f'{r}/resp_server/protocol/reply.cpp', '#include "postgres.h"\n')),
    ('extension/pg.h in commands/', 'layers',
     lambda r: append(f'{r}/resp_server/commands/glob.cpp', '#include "extension/pg.h"\n')),
    ('uv.h in commands/', 'layers',
     lambda r: append(f'{r}/resp_server/commands/command_table.h', '#include <uv.h>\n')),
    ('a PostgreSQL header in the unit tests', 'layers',
     lambda r: append(f'{r}/resp_server/tests/test_main.cpp', '#include "utils/elog.h"\n')),
    ('uv.h in pg/', 'layers',
     lambda r: append(f'{r}/resp_server/pg/writes.cpp', '#include <uv.h>\n')),
    ('the core including a front end', 'layers',
     lambda r: append(f'{r}/extension/fetch.cpp', '#include "resp_server/pg/shared_state.h"\n')),
    ('a net/ file including the top of resp_server/, whose worker.cpp reaches net/', 'cycles',
     lambda r: append(f'{r}/resp_server/net/listener.cpp', '#include "resp_server/entry.h"\n')),
    ('pg/ including auth/, which includes pg/', 'layers',
     lambda r: append(f'{r}/resp_server/pg/writes.cpp', '#include "resp_server/auth/logins.h"\n')),
    ('pg.h in a file of auth/ that the unit tests reach', 'pg-free',
     lambda r: append(f'{r}/resp_server/auth/password_check.cpp', '#include "extension/pg.h"\n')),
    ('a PostgreSQL header in a core header that protocol/ reaches', 'pg-free',
     lambda r: append(f'{r}/extension/shard.h', '#include "utils/elog.h"\n')),
    ('uv.h in a header of net/ that the unit tests include', 'pg-free',
     lambda r: append(f'{r}/resp_server/net/batching.h', '#include <uv.h>\n')),
    ('extension/pg.h in net/', 'layers',
     lambda r: append(f'{r}/resp_server/net/uv_stream.cpp', '#include "extension/pg.h"\n')),
    ('uv.h in clients/', 'layers',
     lambda r: append(f'{r}/resp_server/clients/connection.cpp', '#include <uv.h>\n')),
    ('the transport included beside PostgreSQL outside the worker\'s main', 'layers',
     lambda r: append(f'{r}/resp_server/write_worker.cpp', '#include "resp_server/net/transport.h"\n')),
    ('commands/ including a PostgreSQL-facing header of the core', 'pg-free',
     lambda r: append(f'{r}/resp_server/commands/glob.cpp', '#include "extension/fetch.h"\n')),
    ('a file missing from its README', 'readmes',
     lambda r: append(f'{r}/resp_server/net/unlisted.cpp', '/* unlisted.cpp */\n')),
    ('a README listing a file that is gone', 'readmes',
     lambda r: os.remove(f'{r}/resp_server/commands/glob.cpp')),
    ('a source file over 800 lines', 'size',
     lambda r: append(f'{r}/resp_server/commands/glob.cpp', '\n' * (MAX_LINES + 1))),
    ('a doc of docs/ over 800 lines', 'size',
     lambda r: append(f'{r}/docs/RESP.md', '\n' * (MAX_LINES + 1))),
    ('a PG_FUNCTION_INFO_V1 function whose body does not go through the wrapper', 'boundary',
     lambda r: append(f'{r}/extension/sql_functions.cpp', 'extern "C" {\nPG_FUNCTION_INFO_V1(local_cache_bare);\n}\n'
                      'extern "C" Datum local_cache_bare(PG_FUNCTION_ARGS)\n{\n\treturn (Datum) 0;\n}\n')),
    ('an SQL-callable function defined by hand', 'boundary',
     lambda r: replace(f'{r}/extension/sql_functions.cpp', 'LOCAL_CACHE_V1_FUNCTION(local_cache_flush_all, flush_all)',
                       'extern "C" Datum local_cache_flush_all(PG_FUNCTION_ARGS)\n{\n\treturn flush_all(fcinfo);\n}')),
    ('a SECURITY DEFINER function without search_path = pg_catalog, pg_temp', 'definer',
     lambda r: replace(f'{r}/sql/local_cache--1.4--1.5.sql',
                       'SECURITY DEFINER SET search_path = pg_catalog, pg_temp SET jit = off AS $$\nBEGIN\n'
                       '    PERFORM local_cache._flush_at_commit',
                       'SECURITY DEFINER SET search_path = pg_catalog SET jit = off AS $$\nBEGIN\n'
                       '    PERFORM local_cache._flush_at_commit')),
    ('a SECURITY DEFINER function renamed without being replaced', 'definer',
     lambda r: replace(f'{r}/sql/local_cache--1.4--1.5.sql',
                       'CREATE OR REPLACE FUNCTION local_cache._unregister_as_owner',
                       'CREATE OR REPLACE FUNCTION local_cache._unregister_as_owner_unused')),
    ('docs/ naming a glob that matches no file', 'paths',
     lambda r: append(f'{r}/docs/TECHNICAL.md', '\nThe handlers are in `resp_server/cmd_*.cpp`.\n')),
    ('a folder README naming a file that is gone, without its folder', 'paths',
     lambda r: append(f'{r}/resp_server/pg/README.md', '\nWrites and batches: write_commands.cpp.\n')),
    ('a README linking to a README that is gone', 'paths',
     lambda r: append(f'{r}/README.md', '\nThe [layers](resp_server/network/README.md).\n')),
    ('a heading renamed that a link of docs/ names by its anchor', 'paths',
     lambda r: replace(f'{r}/docs/TECHNICAL.md', '\n## Locking\n', '\n## Locks\n')),
    ('a doc linking to a doc of docs/ that is not there', 'paths',
     lambda r: append(f'{r}/docs/RESP.md', '\nSee [the notes](NOTES.md).\n')),
    ('a C++ comment naming a heading of docs/ that is not there', 'paths',
     lambda r: append(f'{r}/resp_server/commands/write_job.h', '/* docs/RESP.md#write-jobs */\n')),
    ('a file renamed that the docs still name', 'paths',
     lambda r: os.rename(f'{r}/regress/t/011_resp_tls.pl', f'{r}/regress/t/011_tls.pl')),
    ('an unreleased CHANGELOG section naming a script that is not there', 'paths',
     lambda r: unreleased(f'{r}/CHANGELOG.md', 'Upgrade script: `sql/local_cache--8.9--9.0.sql`.')),
    ('a C++ comment naming a test that is gone', 'paths',
     lambda r: append(f'{r}/resp_server/commands/write_job.h', '/* tested by tests/write_job_test.cpp */\n')),
    ('a background worker main defined by hand', 'boundary',
     lambda r: replace(f'{r}/resp_server/worker.cpp',
                       'LOCAL_CACHE_WORKER_MAIN(local_cache_resp_worker_main, local_cache::resp::worker_main)',
                       'extern "C" PGDLLEXPORT void local_cache_resp_worker_main(Datum arg);\n'
                       'void local_cache_resp_worker_main(Datum arg)\n{\n\tlocal_cache::resp::worker_main(arg);\n}')),
)


# Registrations that name a function without its wrapper: (what, file, as registered, unwrapped).
UNWRAPPED = (
    ('a hook assignment', 'extension/planner.cpp', 'planner_hook = pg_entry<plan_query>;', 'planner_hook = plan_query;'),
    ('a transaction callback registration', 'extension/invalidation.cpp', 'RegisterXactCallback(pg_entry<xact_event>,',
     'RegisterXactCallback(xact_event,'),
    ('a syscache callback registration', 'extension/cached_table.cpp', '(AUTHOID, pg_entry<roles_changed>,', '(AUTHOID, roles_changed,'),
    ('an exit callback registration', 'resp_server/pg/shared_state.cpp', 'on_shmem_exit(pg_entry<worker_ended>,',
     'on_shmem_exit(worker_ended,'),
    ('an FDW routine assignment', 'fdw/scan.cpp', '= pg_entry<begin_scan>;', '= begin_scan;'),
    ('the rmgr table', 'extension/wal.cpp', 'pg_entry<redo>,', 'redo,'),
    ('a tree walker call', 'extension/planner.cpp', 'as_callback<Walker>(pg_entry<contains_rewritable>)',
     'as_callback<Walker>(contains_rewritable)'),
    ('a libuv timer registration', 'resp_server/net/event_loop.cpp', 'uv_callback<Handle::fired>, timeout_ms',
     'Handle::fired, timeout_ms'),
    ('a libuv read registration', 'resp_server/net/uv_stream.cpp', 'connection_callback<on_read>', 'on_read'),
    ('a libuv check registration (a lambda)', 'resp_server/net/event_loop.cpp', 'uv_callback<Hooks::after_turn>',
     '[](uv_check_t *) noexcept {}'),
    ('a libuv close registration', 'resp_server/net/listener.cpp', 'uv_callback<Socket::closed>)', 'Socket::closed)'),
    ('a libuv poll registration', 'resp_server/net/listener.cpp', 'uv_callback<Socket::readable>)',
     'Socket::readable)'),
)
BREAKAGES += tuple((f'{what} naming an unwrapped function', 'boundary',
                    lambda r, path=path, old=old, new=new: replace(f'{r}/{path}', old, new))
                   for what, path, old, new in UNWRAPPED)


def self_test(root):
    files = tracked_files(root)
    passed = failed = 0

    def result(ok, what):
        nonlocal passed, failed
        print(('ok - ' if ok else 'not ok - ') + what)
        passed, failed = passed + ok, failed + (not ok)

    with tempfile.TemporaryDirectory() as tmp:
        copy = os.path.join(tmp, 'tree')

        def fresh_copy():
            shutil.rmtree(copy, ignore_errors=True)
            for f in files:
                os.makedirs(os.path.dirname(os.path.join(copy, f)), exist_ok=True)
                shutil.copy(os.path.join(root, f), os.path.join(copy, f))

        fresh_copy()
        baseline = run_checks(copy, quiet=True)
        result(not baseline, 'self-test: the tree passes every check' +
               (f' (fails: {", ".join(baseline)})' if baseline else ''))
        for name, check_name, breaking in BREAKAGES:
            fresh_copy()
            breaking(copy)
            # A breakage proves something only if its check passed before it; the other checks
            # cannot change that verdict, so only its own runs.
            result(check_name not in baseline and check_name in run_checks(copy, quiet=True, only=check_name),
                   f'self-test: {name} fails the {check_name} check')
    return passed, failed


def main(argv):
    here = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    if argv[1:2] == ['--self-test']:
        passed, failed = self_test(argv[2] if len(argv) > 2 else here)
    else:
        root = argv[1] if len(argv) > 1 else here
        failing = run_checks(root)
        failed = len(failing)
        passed = len(CHECKS) - failed
    print(f'{passed} passed, {failed} failed')
    return 1 if failed else 0


if __name__ == '__main__':
    sys.exit(main(sys.argv))
