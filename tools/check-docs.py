#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""Check that the man pages and Documentation/ keep up with the code.

Run by 'make lint' (make docs-check) and by selftests/hps_install.sh.
Fails (exit status 1, one line per problem) when

- a sysctl of af_hps/hps_sysctl.c is missing from af_hps.7's SYSCTLS or
  from sysctl.rst, or one of them documents a sysctl the code does not
  have, or the two disagree on its type, unit, range or default, or the
  type disagrees with the code's handler (proc_douintvec_minmax: unsigned;
  a handler named *doulongvec*: an unsigned long vector, whose default may
  be "computed" when the code derives it from the machine);
- a counter of af_hps/hps_stats.c is missing from af_hps.7's STATISTICS or
  from af_hps.rst, or af_hps.7 lists one the code does not have;
- a name of include/uapi/linux/af_hps.h (every #define and every field of
  every structure) is missing from af_hps.7 or af_hps.rst, or af_hps.7's
  "SOL_HPS options" lists an option the header does not define;
- an option of tools/preload/hps_run, or an HPS_RUN_* variable the script
  or the library reads, is missing from hps_run.1 (or the variable from
  preload.rst), or hps_run.1 lists an option the script does not take;
- a long option or a test of tools/bench/hps-bench.c is missing from
  hps-bench.1 (or the test from performance.rst), or hps-bench.1 lists
  one the program does not have;
- a long option of tools/hps-ss.c is missing from hps-ss.8's OPTIONS, or
  hps-ss.8 lists one the program does not take;
- a tracepoint of af_hps/hps_trace.h is missing from af_hps.7's TRACEPOINTS
  or from af_hps.rst, or af_hps.7 lists one the code does not have;
- a man page does not render without warnings (groff -ww -man -z, and
  man --warnings -l where man-db is installed).

A new man page goes into Documentation/man/ and PAGES below; a new kind of
interface (socket diagnostics, tracepoints) gets a check of its own here.
"""

import os
import re
import shutil
import subprocess
import sys

TOP = os.path.abspath(os.path.join(os.path.dirname(__file__), '..'))
MAN = os.path.join(TOP, 'Documentation', 'man')
DOC = os.path.join(TOP, 'Documentation')
PAGES = ['af_hps.7', 'hps_run.1', 'hps-bench.1', 'hps-ss.8']

problems = []


def problem(msg):
    problems.append(msg)


def read(*path):
    with open(os.path.join(TOP, *path), encoding='utf-8') as f:
        return f.read()


def plain(roff):
    """roff source to plain words: fonts, escapes and quotes removed."""
    s = re.sub(r'\\f[BIRP]', '', roff)
    s = s.replace('\\-', '-').replace('\\&', '').replace('\\|', '')
    s = re.sub(r'\\\(\w\w', ' ', s)
    return s.replace('"', '')


def sections(page):
    """{(SH, SS): [lines]} of a man page's source."""
    out = {}
    sh = ss = ''
    for line in read('Documentation', 'man', page).splitlines():
        if line.startswith('.SH '):
            sh, ss = plain(line[4:]).strip(), ''
            continue
        if line.startswith('.SS '):
            ss = plain(line[4:]).strip()
            continue
        out.setdefault((sh, ss), []).append(line)
    return out


def tags(lines):
    """The tag lines of .TP items, in plain text."""
    return [plain(re.sub(r'^\.[A-Z]+ ?', '', lines[i + 1]))
            for i, line in enumerate(lines[:-1]) if line == '.TP']


def tag_words(lines, pattern=r'[A-Za-z_][A-Za-z0-9_-]*'):
    words = []
    for tag in tags(lines):
        words += re.findall(pattern, tag)
    return words


def section_lines(secs, sh, ss=None):
    return [line for (h, s), lines in secs.items()
            if h == sh and (ss is None or s == ss) for line in lines]


def has_word(text, word):
    return re.search(r'(?<![\w-])' + re.escape(word) + r'(?![\w-])',
                     text) is not None


# --- af_hps.7: sysctls, counters, the uapi header -------------------------

def check_sysctls(secs, af_rst):
    src = read('af_hps', 'hps_sysctl.c')
    code = {}
    for m in re.finditer(r'\.procname\s*=\s*"(\w+)",(.*?)\}', src, re.S):
        handler = re.search(r'\.proc_handler\s*=\s*(\w+)', m.group(2))
        code[m.group(1)] = handler.group(1) if handler else ''
    if not code:
        problem('hps_sysctl.c: no sysctl found (has its table changed?)')

    rst = {}
    text = read('Documentation', 'sysctl.rst')
    for m in re.finditer(r'^(\w+) - ([A-Z ]+?) \(([^)]*)\)\n(.*?)(?=^\w+ - |\Z)',
                         text, re.S | re.M):
        body = m.group(4)
        rng = re.search(r'Range: (\d+) - (\d+)', body)
        dflt = re.search(r'Default: (\d+|computed)', body)
        rst[m.group(1)] = (m.group(2).lower(), m.group(3),
                           rng.groups() if rng else None,
                           dflt.group(1) if dflt else None)

    man = {}
    for tag in tags(section_lines(secs, 'SYSCTLS')):
        m = re.match(r'\s*(\w+)\s+\((\w[\w ]*), (\w+); (\d+) to (\d+); '
                     r'default (\d+|computed)\)\s*$', tag)
        if not m:
            problem('af_hps.7: SYSCTLS item not in the form "name (type, '
                    'unit; min to max; default N)": %s' % tag.strip())
            continue
        man[m.group(1)] = (m.group(2), m.group(3), (m.group(4), m.group(5)),
                           m.group(6))

    for name, handler in code.items():
        if name not in man:
            problem('af_hps.7: sysctl net.hps.%s is not documented' % name)
        if name not in rst:
            problem('sysctl.rst: sysctl net.hps.%s is not documented' % name)
        if name in rst and name in man and rst[name] != man[name]:
            problem('af_hps.7 and sysctl.rst disagree on net.hps.%s: '
                    '%s against %s' % (name, man[name], rst[name]))
        if 'doulongvec' in handler:
            want = 'unsigned long vector'
        elif 'uint' in handler:
            want = 'unsigned integer'
        else:
            want = 'integer'
        for where, d in (('af_hps.7', man), ('sysctl.rst', rst)):
            if name in d and d[name][0] != want:
                problem("%s: net.hps.%s is '%s', but the code's %s makes "
                        "it '%s'" % (where, name, d[name][0], handler, want))
    for where, d in (('af_hps.7', man), ('sysctl.rst', rst)):
        for name in d:
            if name not in code:
                problem('%s: documents net.hps.%s, which hps_sysctl.c does '
                        'not have' % (where, name))
    if code and 'net.hps' not in af_rst:
        problem('af_hps.rst: does not mention net.hps')


def check_counters(secs, af_rst):
    src = read('af_hps', 'hps_stats.c')
    code = re.findall(r'\[HPS_STAT_\w+\]\s*=\s*"(\w+)"', src)
    if not code:
        problem('hps_stats.c: no counter found (has its table changed?)')
    man = tag_words(section_lines(secs, 'STATISTICS'))
    for name in code:
        if name not in man:
            problem('af_hps.7: counter %s of /proc/net/hps_stat is not '
                    'documented under STATISTICS' % name)
        if '``%s``' % name not in af_rst:
            problem('af_hps.rst: counter %s of /proc/net/hps_stat is not '
                    'documented' % name)
    for name in man:
        if name not in code:
            problem('af_hps.7: STATISTICS lists %s, which hps_stats.c does '
                    'not count' % name)


def check_uapi(secs, man_text, af_rst):
    src = read('include', 'uapi', 'linux', 'af_hps.h')
    src = re.sub(r'/\*.*?\*/', '', src, flags=re.S)
    defines = re.findall(r'^#define\s+([A-Z]\w*)', src, re.M)
    structs = re.findall(r'^struct\s+(\w+)\s*\{', src, re.M)
    fields = re.findall(r'^\s+__[us]\d+\s+(\w+)\s*(?:\[[^]]*\])?;', src, re.M)
    if not defines:
        problem('af_hps.h: no #define found')
    for name in defines + structs + fields:
        if not has_word(man_text, name):
            problem('af_hps.7: %s of <linux/af_hps.h> is not documented'
                    % name)
        if not has_word(af_rst, name):
            problem('af_hps.rst: %s of <linux/af_hps.h> is not documented'
                    % name)
    for name in tag_words(section_lines(secs, 'SOCKET OPTIONS',
                                        'SOL_HPS options')):
        if name.startswith('HPS_') and name not in defines:
            problem('af_hps.7: SOL_HPS option %s is not in <linux/af_hps.h>'
                    % name)


# --- hps_run.1 and hps-bench.1 ---------------------------------------------

def check_hps_run():
    script = read('tools', 'preload', 'hps_run')
    lib = read('tools', 'preload', 'libhps_preload.c')
    rst = read('Documentation', 'preload.rst')
    secs = sections('hps_run.1')
    m = re.search(r'getopts\s+(\S+)', script)
    letters = [c for c in m.group(1) if c != ':'] if m else []
    if not letters:
        problem('hps_run: no getopts line found')
    man_opts = [w[1:] for w in tag_words(section_lines(secs, 'OPTIONS'),
                                         r'-\w') if len(w) == 2]
    for c in letters:
        if c not in man_opts:
            problem('hps_run.1: option -%s is not documented' % c)
    for c in man_opts:
        if c not in letters:
            problem('hps_run.1: documents option -%s, which hps_run does not '
                    'take' % c)
    env = sorted(set(re.findall(r'HPS_RUN_[A-Z_]+', script + lib)))
    man_env = tag_words(section_lines(secs, 'ENVIRONMENT'))
    for v in env:
        if v not in man_env:
            problem('hps_run.1: %s is not documented under ENVIRONMENT' % v)
        if v not in rst:
            problem('preload.rst: %s is not documented' % v)


def check_hps_bench():
    src = read('tools', 'bench', 'hps-bench.c')
    rst = read('Documentation', 'performance.rst')
    secs = sections('hps-bench.1')
    opts = re.findall(r'\{\s*"([\w-]+)",\s*(?:no|required|optional)_argument',
                      src)
    tests = re.findall(r'\{\s*"(\w+)",\s*TEST_\w+', src)
    if not opts or not tests:
        problem('hps-bench.c: no option or test table found')
    man_opts = [w[2:] for w in tag_words(section_lines(secs, 'OPTIONS'),
                                         r'--[\w-]+')]
    man_tests = tag_words(section_lines(secs, 'TESTS'))
    for o in opts:
        if o not in man_opts:
            problem('hps-bench.1: option --%s is not documented' % o)
    for o in man_opts:
        if o not in opts:
            problem('hps-bench.1: documents --%s, which hps-bench does not '
                    'take' % o)
    for t in tests:
        if t not in man_tests:
            problem('hps-bench.1: test %s is not documented' % t)
        if not has_word(rst, t):
            problem('performance.rst: test %s is not documented' % t)
    for t in man_tests:
        if t not in tests and t != 'or':
            problem('hps-bench.1: documents test %s, which hps-bench does '
                    'not have' % t)


# --- hps-ss.8, the tracepoints ----------------------------------------------

def check_hps_ss():
    src = read('tools', 'hps-ss.c')
    secs = sections('hps-ss.8')
    opts = re.findall(r'\{\s*"([\w-]+)",\s*(?:no|required|optional)_argument',
                      src)
    if not opts:
        problem('hps-ss.c: no option table found')
    man_opts = [w[2:] for w in tag_words(section_lines(secs, 'OPTIONS'),
                                         r'--[\w-]+')]
    for o in opts:
        if o not in man_opts:
            problem('hps-ss.8: option --%s is not documented' % o)
    for o in man_opts:
        if o not in opts:
            problem('hps-ss.8: documents --%s, which hps-ss does not take'
                    % o)


def check_tracepoints(secs, af_rst):
    src = read('af_hps', 'hps_trace.h')
    events = re.findall(r'^(?:TRACE_EVENT|DEFINE_EVENT)\((?:\w+,\s*)?'
                        r'(hps_\w+),', src, re.M)
    if not events:
        problem('hps_trace.h: no tracepoint found')
    man = tag_words(section_lines(secs, 'TRACEPOINTS'))
    for name in events:
        if name not in man:
            problem('af_hps.7: tracepoint %s is not documented under '
                    'TRACEPOINTS' % name)
        if '``%s``' % name not in af_rst:
            problem('af_hps.rst: tracepoint %s is not documented' % name)
    for name in man:
        if name.startswith('hps_') and name not in events:
            problem('af_hps.7: TRACEPOINTS lists %s, which hps_trace.h does '
                    'not define' % name)


# --- rendering ---------------------------------------------------------------

def check_render():
    env = dict(os.environ, MANWIDTH='80', LC_ALL='C.UTF-8')
    for page in PAGES:
        path = os.path.join(MAN, page)
        cmds = [['groff', '-ww', '-man', '-z', path]]
        if shutil.which('man'):
            cmds.append(['man', '--warnings', '-l', path])
        for cmd in cmds:
            if not shutil.which(cmd[0]):
                problem('%s is missing (groff-base): cannot check %s'
                        % (cmd[0], page))
                continue
            r = subprocess.run(cmd, env=env, stdout=subprocess.DEVNULL,
                               stderr=subprocess.PIPE, text=True,
                               check=False)
            if r.returncode or r.stderr.strip():
                problem('%s: %s: %s' % (page, ' '.join(cmd[:-1]),
                                        r.stderr.strip() or
                                        'exit status %d' % r.returncode))


def main():
    secs = sections('af_hps.7')
    man_text = plain(read('Documentation', 'man', 'af_hps.7'))
    af_rst = read('Documentation', 'af_hps.rst')
    check_sysctls(secs, af_rst)
    check_counters(secs, af_rst)
    check_uapi(secs, man_text, af_rst)
    check_hps_run()
    check_hps_bench()
    check_hps_ss()
    check_tracepoints(secs, af_rst)
    check_render()
    for p in problems:
        print('check-docs: ' + p)
    if problems:
        print('check-docs: %d problem(s)' % len(problems))
        return 1
    print('check-docs: ok (%s)' % ', '.join(PAGES))
    return 0


if __name__ == '__main__':
    sys.exit(main())
