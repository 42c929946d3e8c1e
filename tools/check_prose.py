"""tools/check_prose.py: owns tools/check_tree.py's `paths` rule, the one about prose: what the
README files, SECURITY.md, docs/*.md, CHANGELOG.md's unreleased sections and the C++ comments name
is there.

  - a name of the tree's files (`extension/fetch.h`, `bench/run`, `regress/t/011_resp_tls.pl`, a
    glob, a folder) names a file or folder of the tree;
  - a link to a Markdown file (`[the layers](resp_server/README.md)`, `(CONSISTENCY.md#replicas)`,
    `(#locking)`) names a file of the tree, and its anchor a heading of that file, as GitHub makes
    anchors of headings; so does a `docs/X.md#anchor` named outside a link (in a C++ comment).

check_tree.py runs it (check_paths); it is not run alone.
"""
import fnmatch
import os
import re

# Prose whose file names must name files of the tree: these, docs/*.md and every README.md, and
# the comments of the C++ sources. CHANGELOG.md's released sections are history: they name the
# files there were then.
PROSE_FILES = ('README.md', 'SECURITY.md', 'CHANGELOG.md')
# What is taken for a name of the tree's: a name with a slash whose first folder is a folder of
# the tree, and that starts at the top (`bench/run`), ends with a slash (`checks/`) or names a
# file with an extension (`net/server.h`, `t/RespTls.pm`): not `utils/elog.h`, `I/O` or `t/f`;
# a name without a slash when it ends so (not .c, .conf or .json, Redis's and PostgreSQL's files
# and the outputs of commands); in C++ comments only .cpp (a bare .h there is often PostgreSQL's).
# A file from outside is named in angle brackets (<lib/stringinfo.h>), or as a URL.
NAME_SUFFIXES = ('.cpp', '.h', '.py', '.sh', '.pl', '.pm', '.sql', '.mjs', '.spec', '.dict', '.go')
NAME = re.compile(r'(?:[\w.*?/<>=$~+-]|\{[\w.,*-]*\})+')
URL = re.compile(r'\b[a-z][\w+.-]*://\S+')


def current_text(path, text):
    """The text whose names must exist: CHANGELOG.md without its released sections."""
    if os.path.basename(path) != 'CHANGELOG.md':
        return text
    parts = re.split(r'(?m)^(?=## )', text)
    return ''.join(p if not p.startswith('## ') or 'unreleased' in p.split('\n', 1)[0] else
                   '\n' * p.count('\n') for p in parts)


def expand_braces(name):
    m = re.search(r'\{([^{}]*)\}', name)
    if not m:
        return [name]
    return [x for part in m.group(1).split(',') for x in expand_braces(name[:m.start()] + part + name[m.end():])]


def ignored_patterns(root, files):
    """(folder, pattern, anchored) of every .gitignore: build outputs may be named though absent."""
    patterns = []
    for g in (f for f in files if os.path.basename(f) == '.gitignore'):
        for line in open(os.path.join(root, g)).read().splitlines():
            line = line.strip()
            if line and not line.startswith(('#', '!')):
                patterns.append((os.path.dirname(g), line.strip('/'), '/' in line.rstrip('/')))
    return patterns


def is_ignored(path, patterns):
    for folder, pattern, anchored in patterns:
        if folder and not path.startswith(folder + '/'):
            continue
        rest = path[len(folder) + 1:] if folder else path
        if anchored:
            if fnmatch.fnmatchcase(rest, pattern) or rest.startswith(pattern + '/'):
                return True
        elif any(fnmatch.fnmatchcase(part, pattern) for part in rest.split('/')):
            return True
    return False


class Tree:
    def __init__(self, root, files, outside_names=()):
        self.outside_names = outside_names
        self.entries = set(files) | {os.path.dirname(f) for f in files} | {os.path.dirname(f) + '/' for f in files}
        self.folders = {part for f in files for part in f.split('/')[:-1]}
        self.top = {f.split('/')[0] for f in files if '/' in f}
        self.ignored = ignored_patterns(root, files)

    def is_name(self, name, bare_suffixes):
        if not re.search(r'[\w*?]', name) or re.search(r'[<>=$~]', name) or name.startswith('/') or '//' in name:
            return False
        if name.startswith(('./', '../')):
            return True
        last = name.rstrip('/').rsplit('/', 1)[-1]
        if '/' in name:
            return name.split('/')[0] in self.folders and (
                name.split('/')[0] in self.top or name.endswith('/') or '.' in last or re.search(r'[*?{]', last))
        return bool(re.match(r'[\w*{]', name)) and any(n.endswith(bare_suffixes) for n in expand_braces(name)) \
            and name not in self.outside_names

    def has(self, name, folder):
        """Whether name (a glob; a folder when it ends with /) is a file or folder of the tree:
        from the top, from the folder of the text that names it, or the end of a path
        (`net/server.h`; a bare name: any file of that name)."""
        paths = []
        for base in (folder,) if name.startswith('../') else ('', folder):
            path = os.path.normpath(os.path.join(base, name))
            if path.startswith('..'):
                return True  # outside the tree
            if is_ignored(path, self.ignored):
                return True
            paths.append(path + '/' if name.endswith('/') else path)
        if not re.search(r'[*?[]', name):
            return any(p in self.entries for p in paths) or (
                not name.startswith('.') and any(e.endswith('/' + name) for e in self.entries))
        if not name.startswith('.'):
            paths.append('*/' + name)
        return any(fnmatch.fnmatchcase(e, p) for p in paths for e in self.entries)

    def stale(self, where, text, bare_suffixes, first_line=1):
        folder = os.path.dirname(where)
        for m in NAME.finditer(URL.sub(lambda u: ' ' * len(u.group(0)), text)):
            name = m.group(0).rstrip('.')
            if ('/' not in name and '.' not in name) or not self.is_name(name, bare_suffixes):
                continue
            missing = [n for n in expand_braces(name) if not self.has(n, folder)]
            if missing:
                yield (f'{where}:{first_line + text.count(chr(10), 0, m.start())}: `{name}` names no file of the '
                       f'tree' + (f' ({", ".join(missing)})' if missing != [name] else ''))


# ------------------------------------------------------------------ anchors

FENCE = re.compile(r'^\s*(```|~~~)')
HEADING = re.compile(r'^#{1,6}\s+(.*?)(?:\s+#+)?\s*$')
MD_LINK = re.compile(r'\]\(([^()\s]*)\)')
MD_NAMED = re.compile(r'(?<![\w./#-])([\w./-]+\.md)#([\w-]+)')


def anchors(text):
    """The anchors GitHub gives a Markdown file's headings: the text without its markup, lower
    case, without what is neither a word character, a blank nor a hyphen, blanks made hyphens,
    and a repeated one suffixed -1, -2, ... Headings inside fenced code are not headings."""
    found, seen, fenced = set(), {}, False
    for line in text.split('\n'):
        if FENCE.match(line):
            fenced = not fenced
            continue
        m = None if fenced else HEADING.match(line)
        if m:
            words = re.sub(r'!?\[([^\]]*)\]\([^)]*\)', r'\1', m.group(1))  # a link's text stays
            slug = re.sub(r'[^\w\- ]', '', words.lower()).replace(' ', '-')
            found.add(f'{slug}-{seen[slug]}' if slug in seen else slug)
            seen[slug] = seen.get(slug, 0) + 1
    return found


def broken_links(root, fileset, where, text, links, first_line=1):
    """Links (Markdown links when links is true) and docs/X.md#anchor names in text that name a
    Markdown file that is not there, or a heading the file does not have."""
    folder, problems = os.path.dirname(where), []
    if links:
        matches = [(m, m.group(1)) for m in MD_LINK.finditer(text)]
        text = MD_LINK.sub(lambda m: ' ' * len(m.group(0)), text)  # named once
    else:
        matches = []
    matches += [(m, m.group(0)) for m in MD_NAMED.finditer(text)]
    for m, target in matches:
        path, _, anchor = target.partition('#')
        if '://' in path or path.startswith('mailto:') or not (path.endswith('.md') or (not path and anchor)):
            continue
        line = first_line + text.count('\n', 0, m.start())
        if path:
            # a link is relative to its file's folder; a name in prose may start at the top
            candidates = [os.path.normpath(os.path.join(folder, path))] + ([] if links else [os.path.normpath(path)])
            target_file = next((c for c in candidates if c in fileset), None)
        else:
            target_file = where
        if target_file is None:
            problems.append(f'{where}:{line}: `{target}` links to a file that is not in the tree')
        elif anchor and anchor not in anchors(open(os.path.join(root, target_file)).read()):
            problems.append(f'{where}:{line}: `{target}`: {target_file} has no heading with the anchor #{anchor}')
    return problems


def check_paths(root, files, outside_names, comments):
    """The `paths` rule: names of the tree's files and links to its Markdown headings resolve
    (outside_names: names that are never the tree's, such as postgres.h; comments: the pattern of
    a C++ comment)."""
    tree, fileset, problems = Tree(root, files, outside_names), set(files), []
    for f in files:
        if f in PROSE_FILES or f.endswith('/README.md') or (f.startswith('docs/') and f.endswith('.md')):
            text = current_text(f, open(os.path.join(root, f)).read())
            problems += tree.stale(f, text, NAME_SUFFIXES)
            problems += broken_links(root, fileset, f, text, links=True)
        elif f.endswith(('.cpp', '.h')):
            text = open(os.path.join(root, f), errors='replace').read()
            for m in comments.finditer(text):
                first_line = 1 + text.count('\n', 0, m.start())
                problems += tree.stale(f, m.group(0), ('.cpp',), first_line)
                problems += broken_links(root, fileset, f, m.group(0), links=False, first_line=first_line)
    return problems
