#!/usr/bin/env python3
"""tools/check_tree.py: owns the rules of the source tree that the compiler does not check.

    tools/check_tree.py [ROOT]        check the tree (default: this checkout); exit 1 on a violation
    tools/check_tree.py --self-test   break each rule in a copy of the tree and show the check fails

Rules (docs/TECHNICAL.md, "Layers"):
  includes   one include root: project headers are named from the top of the tree
             ("extension/fetch.h"), never with "../", and the named file exists
  layers     what each folder may include (LAYERS below): resp_server/protocol/ and commands/ and
             the unit tests are free of PostgreSQL and libuv; only net/ and the worker's main
             use libuv; the core includes nothing from its front ends
  readmes    every folder's README.md lists each of its files and sub-folders in its
             `| file | ... |` table, and lists nothing that is not there
  size       no tracked source file has more than 800 lines
Each rule prints one `ok - ...` or `not ok - ...` line; the last line is `N passed, N failed`.
"""
import os
import re
import shutil
import subprocess
import sys
import tempfile

MAX_LINES = 800
SOURCE_SUFFIXES = ('.c', '.cpp', '.h', '.py', '.go', '.js', '.mjs', '.sh', '.pl', '.pm', '.sql', '.spec')
SOURCE_NAMES = ('Makefile', 'run', 'report', 'rules')

# Headers that mean "PostgreSQL" or "libuv" wherever they are included.
PG_HEADERS = ('postgres.h', 'postgres_fe.h', 'extension/pg.h', 'fmgr.h')
UV_HEADERS = ('uv.h',)

# folder -> (may include PostgreSQL, may include libuv, project folders or files it may include;
# None: any). A file is ruled by the longest folder that contains it.
PG_FREE_CORE = ('extension/key_bytes.h', 'extension/shard.h')
LAYERS = {
    'extension': (True, False, ('extension/',)),
    'extension/tests': (False, False, ('extension/tests/',) + PG_FREE_CORE),
    'fdw': (True, False, ('extension/', 'fdw/')),
    'resp_server': (True, True, None),
    'resp_server/protocol': (False, False, ('resp_server/protocol/', 'extension/key_bytes.h')),
    'resp_server/commands': (False, False, ('resp_server/protocol/', 'resp_server/commands/') + PG_FREE_CORE),
    'resp_server/net': (True, True, ('resp_server/',) + ('extension/',)),
    'resp_server/pg': (True, False, ('extension/', 'resp_server/protocol/', 'resp_server/commands/',
                                     'resp_server/pg/', 'resp_server/auth/', 'resp_server/shared_state.h')),
    'resp_server/auth': (True, False, ('extension/', 'resp_server/commands/', 'resp_server/auth/',
                                       'resp_server/pg/', 'resp_server/shared_state.h')),
    'resp_server/tests': (False, False, ('resp_server/protocol/', 'resp_server/commands/', 'resp_server/tests/',
                                         'resp_server/auth/password_check.h', 'resp_server/net/batching.h',
                                         'resp_server/net/disconnect_log.h', 'resp_server/net/tls_session.h')
                          + PG_FREE_CORE),
}
# Files PostgreSQL-free code includes from folders that may use PostgreSQL: held to the same rule.
PG_FREE_FILES = PG_FREE_CORE + ('resp_server/auth/password_check.h', 'resp_server/auth/password_check.cpp',
                                'resp_server/net/batching.h', 'resp_server/net/disconnect_log.h',
                                'resp_server/net/tls_session.h', 'resp_server/net/tls_session.cpp')

# Folders that must have a README.md with a file table (and any other folder that has one).
README_FOLDERS = ('extension', 'fdw', 'resp_server', 'resp_server/protocol', 'resp_server/commands',
                  'resp_server/net', 'resp_server/pg', 'resp_server/auth', 'sql', 'tools', 'bench', 'regress')

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
    skip = re.compile(r'(^|/)(\.git|node_modules|output|output_isolation|results|tmp_check)(/|$)|\.(o|d|so|bc)$')
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
        if layer is None and f not in PG_FREE_FILES:
            continue
        pg_ok, uv_ok, allowed = LAYERS[layer] if layer else (True, True, None)
        if f in PG_FREE_FILES:
            pg_ok, uv_ok = False, False
            allowed = tuple(a for a in (allowed or ()) if not a.endswith('/')) + PG_FREE_FILES + (
                'resp_server/protocol/',)
        text = open(os.path.join(root, f), errors='replace').read()
        for kind, name in INCLUDE.findall(text):
            where = f'{f} ({layer or "PostgreSQL-free file"}/)'
            if not pg_ok and (name in PG_HEADERS or name.endswith('/pg.h')):
                problems.append(f'{where} includes {name}: this layer is PostgreSQL-free')
            elif not uv_ok and name in UV_HEADERS:
                problems.append(f'{where} includes <{name}>: this layer is libuv-free')
            elif kind == '"' and name in fileset and allowed is not None and not name.startswith(allowed):
                problems.append(f'{where} includes "{name}", outside what it may include')
            elif kind == '"' and name not in fileset and not pg_ok and '/' in name:
                problems.append(f'{where} includes "{name}" (a PostgreSQL header?): this layer is PostgreSQL-free')
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
        if not (f.endswith(SOURCE_SUFFIXES) or base in SOURCE_NAMES):
            continue
        with open(os.path.join(root, f), 'rb') as fh:
            lines = fh.read().count(b'\n')
        if lines > MAX_LINES:
            problems.append(f'{f}: {lines} lines (at most {MAX_LINES}: split it by what it does)')
    return problems


CHECKS = (('includes', check_includes), ('layers', check_layers), ('readmes', check_readmes),
          ('size', check_size))


def run_checks(root, quiet=False):
    files = tracked_files(root)
    failed = []
    for name, check in CHECKS:
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
     lambda r: append(f'{r}/extension/fetch.cpp', '#include "resp_server/shared_state.h"\n')),
    ('pg.h in a PostgreSQL-free file of auth/', 'layers',
     lambda r: append(f'{r}/resp_server/auth/password_check.cpp', '#include "extension/pg.h"\n')),
    ('a file missing from its README', 'readmes',
     lambda r: append(f'{r}/resp_server/net/unlisted.cpp', '/* unlisted.cpp */\n')),
    ('a README listing a file that is gone', 'readmes',
     lambda r: os.remove(f'{r}/resp_server/commands/glob.cpp')),
    ('a source file over 800 lines', 'size',
     lambda r: append(f'{r}/resp_server/commands/glob.cpp', '\n' * (MAX_LINES + 1))),
)


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
            # A breakage proves something only if its check passed before it.
            result(check_name not in baseline and check_name in run_checks(copy, quiet=True),
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
