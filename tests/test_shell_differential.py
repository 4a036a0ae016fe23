"""The shell reader against real bash and dash, on the same scripts.

Each script runs in the real shell with a ``vllm`` program first on PATH that prints
its arguments and its ``KV_*`` environment, and with the real wrappers (``timeout``,
``numactl``, ``taskset``, ``nice``, ``setsid``, ``stdbuf``, ``tini``, ``dumb-init``). kvconfig reads
the same script with the same environment. kvconfig may say "only known at run time";
it may never be wrong:

* every vLLM command kvconfig says runs (nothing unknown, no run-time condition) ran;
* every vLLM command that ran is one kvconfig names (unknown words match anything),
  unless kvconfig said it could not see into part of the script;
* when kvconfig knows everything, the commands that ran are exactly its commands;
* the known ``KV_*`` variables of a command that runs are those the program saw.

Scripts come from a table of hand-picked constructs and from Hypothesis.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from collections import Counter
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kvconfig.load.shell.script import Command, read_script

_VLLM = r"""#!/bin/sh
r=
for a; do r="$r$a$(printf '\037')"; done
e=
for n in KV_A KV_B KV_C; do
  eval "s=\${$n+set}"
  eval "v=\${$n-}"
  e="$e$n=$s:$v$(printf '\037')"
done
printf '\001%s\002%s\003' "$r" "$e"
"""
_WRAPPERS = ("timeout", "numactl", "taskset", "nice", "setsid", "stdbuf", "tini", "dumb-init")
_HOME = "/home/kv"


@pytest.fixture(scope="module")
def bindir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    missing = [w for w in _WRAPPERS if shutil.which(w) is None]
    assert not missing, f"install {missing} (.ci/run installs numactl, tini, dumb-init)"
    d = tmp_path_factory.mktemp("bin")
    (d / "vllm").write_text(_VLLM)
    (d / "vllm").chmod(0o755)
    (d / "work").mkdir()
    return d


Run = tuple[tuple[str, ...], tuple[tuple[str, str | None], ...]]


def real(shell: str, script: str, env: dict[str, str], bindir: Path) -> list[Run]:
    """The vLLM commands ``shell -c script`` runs: (argv, KV_* variables, None: unset)."""
    full = {"PATH": f"{bindir}:/usr/bin:/bin", "HOME": _HOME, **env}
    proc = subprocess.run(
        [shell, "-c", script, "sh"],
        env=full,
        cwd=bindir / "work",
        capture_output=True,
        timeout=20,
        check=False,
    )
    out = proc.stdout.decode("utf-8", "surrogateescape")
    runs: list[Run] = []
    for record in out.split("\001")[1:]:
        argv_text, _, rest = record.partition("\002")
        env_text = rest.partition("\003")[0]
        argv = tuple(argv_text.split("\037")[:-1])
        seen = []
        for item in env_text.split("\037")[:-1]:
            name, _, state = item.partition("=")
            flag, _, value = state.partition(":")
            seen.append((name, value if flag == "set" else None))
        runs.append((("vllm", *argv), tuple(seen)))
    return runs


def _matches(cmd: Command, argv: tuple[str, ...]) -> bool:
    unknown = {i for i, _ in cmd.unknown}

    def go(i: int, j: int) -> bool:
        if i == len(cmd.words):
            return j == len(argv)
        if i in unknown:
            return any(go(i + 1, k) for k in range(j, len(argv) + 1))
        return j < len(argv) and cmd.words[i] == argv[j] and go(i + 1, j + 1)

    return go(0, 0)


def check(script: str, env: dict[str, str | None], bindir: Path, shells: tuple[str, ...]) -> None:
    """kvconfig's reading agrees with each shell for every value the unknowns may take."""
    for shell in shells:
        dialect = "bash" if shell == "bash" else "sh"
        reading = read_script(script, {"HOME": _HOME, **env}, dialect=dialect)
        vllm = [c for c in reading.commands if os.path.basename(c.words[0]) == "vllm"]
        sure = [c for c in vllm if not c.unknown and not c.when]
        unknown_names = [k for k, v in env.items() if v is None]
        trials = [{}] if not unknown_names else [
            {k: v for k in unknown_names} for v in ("16", "throughput", "", "a b")
        ]  # fmt: skip
        for trial in trials:
            values = {k: v for k, v in env.items() if v is not None} | trial
            runs = real(shell, script, values, bindir)
            ran = Counter(argv for argv, _ in runs)
            said = Counter(c.words for c in sure)
            where = f"{shell}: {script!r} with {values}"
            missing = said - ran
            assert not missing, f"{where}: kvconfig says {list(missing)} runs; ran {list(ran)}"
            if not reading.blind:
                for argv in ran:
                    assert any(_matches(c, argv) for c in vllm), (
                        f"{where}: {argv} ran, kvconfig names only {[c.words for c in vllm]}"
                    )
                if len(sure) == len(vllm):
                    assert ran == said, f"{where}: ran {list(ran)}, kvconfig says {list(said)}"
            for c in sure:
                known = {n: v for n, v in c.env.items() if n.startswith("KV_") and v is not None}
                assert any(
                    argv == c.words and all(dict(e).get(n) == v for n, v in known.items())
                    for argv, e in runs
                ), f"{where}: {c.words} runs with {known}; ran {runs}"


# (script, environment (None: only known at run time), shells)
BOTH = ("bash", "dash")
TABLE: dict[str, tuple[str, dict[str, str | None], tuple[str, ...]]] = {
    "if on a known value": (
        'if [ "$PROFILE" = throughput ]; then BS=128; else BS=64; fi\n'
        "exec vllm serve m --block-size $BS",
        {"PROFILE": "throughput"},
        BOTH,
    ),
    "if on a run-time value": (
        'if [ "$PROFILE" = throughput ]; then BS=128; else BS=64; fi\n'
        "exec vllm serve m --block-size $BS",
        {"PROFILE": None},
        BOTH,
    ),
    "elif chain": (
        'if [ "$X" = a ]; then B=1; elif [ -n "$X" ]; then B=2; else B=3; fi; vllm serve $B',
        {"X": "z"},
        BOTH,
    ),
    "assignment after then": (
        'if true; then BS=32; fi; vllm serve m --block-size "$BS"',
        {},
        BOTH,
    ),
    "case": (
        'case "$GPU" in H100|H200) BS=64;; A*) BS=16;; *) BS=8;; esac; vllm serve m $BS',
        {"GPU": "A100"},
        BOTH,
    ),
    "bracket expressions of patterns": (
        'case "$K" in [[:digit:]]*) vllm serve d;; []a]) vllm serve b;;\n'
        "  [!x-z]) vllm serve n;; esac\n"
        'case "$J" in [a"&&"b]) vllm serve q;; esac\n'
        'P="[a~~b]"; case "~" in $P) vllm serve t;; esac\n'
        'case "$K" in [\\]x]) vllm serve e;; [[:foo:]a]) vllm serve f;;\n'
        "  [[:punct:]]) vllm serve p;; esac\n"
        'case "$K" in [[=a=]]) vllm serve eq;; [a-]) vllm serve r;; \\*) vllm serve s;; esac',
        {"K": "]", "J": "&"},
        BOTH,
    ),
    "getopts with no arguments keeps the defaults": (
        'M=default; while getopts ":m:p:h" o; do case $o in m) M=$OPTARG;; p) P=$OPTARG;;\n'
        "  h) exit 0;; \\?) exit 1;; esac; done; KV_A=$M KV_B=${P-unset} vllm serve $M",
        {},
        BOTH,
    ),
    "getopts over set -- and its errors": (
        "set -- -m m1 -q -pv -x -- -m m2 rest\n"
        'while getopts ":m:p:" o; do KV_A=$o KV_B=${OPTARG-u} KV_C=$OPTIND vllm serve "$o"; done\n'
        'KV_A=$o KV_C=$OPTIND vllm serve end "$@"; shift $((OPTIND - 1)); vllm serve "$@"\n'
        'OPTIND=1; set -- -m; getopts "m:" o 2>/dev/null; KV_A=$o vllm serve "$?" ${OPTARG-u}\n'
        "OPTIND=1; getopts ab o -a -b; vllm serve $o $OPTIND; getopts ab o -a -b; vllm serve $o",
        {},
        BOTH,
    ),
    "set -u ends the script at an unset parameter": (
        'set -u; KV_A=${X-d}; vllm serve a "$KV_A" ${Y:+y} "$@"; f() { vllm serve "$1"; }; f b\n'
        "set +u; vllm serve c $Q; set -o nounset; vllm serve d ${#Q}; vllm serve never",
        {},
        BOTH,
    ),
    "a launch script the script writes and then runs": (
        "D=$(mktemp -d)\n"
        'cat > "$D/run.sh" <<EOF\nvllm serve m --block-size $BS "\\$1"\nEOF\n'
        'cat >> "$D/run.sh" <<\'EOF\'\nKV_A=$BS vllm serve "$1" two\nEOF\n'
        'bash "$D/run.sh" a; sh "$D/run.sh" b\n'
        'echo \'vllm serve echoed\' > "$D/e.sh"; . "$D/e.sh"; : > "$D/e.sh"; . "$D/e.sh"\n'
        'cp "$D/run.sh" "$D/copy.sh"; mv "$D/copy.sh" "$D/moved.sh"; bash "$D/moved.sh" c\n'
        'printf "vllm serve printed\\n" > "$D/run.sh"; bash "$D/run.sh" d\n'
        'rm -rf "$D"',
        {"BS": "32"},
        BOTH,
    ),
    "a file written on one side of a run-time choice": (
        "mkdir -p /tmp/kvconfig-written && cd /tmp/kvconfig-written || exit\n"
        "echo 'vllm serve old' > one.sh\n"
        "if [ \"$P\" = a ]; then echo 'vllm serve A' > one.sh; echo 'vllm serve A' > two.sh\n"
        "else echo 'vllm serve B' > one.sh; fi\n"
        "sh one.sh; sh two.sh; chmod +x one.sh; ./one.sh; cd / && rm -rf /tmp/kvconfig-written",
        {"P": None},
        BOTH,
    ),
    "a file written on both sides of a known choice, run by its path": (
        "mkdir -p /tmp/kvconfig-written && cd /tmp/kvconfig-written || exit\n"
        "if [ \"$P\" = a ]; then echo 'vllm serve A' > one.sh\n"
        "else echo 'vllm serve B' > one.sh; fi\n"
        "./one.sh; chmod 755 one.sh; ./one.sh x; cat one.sh > two.sh; sh two.sh\n"
        "cd / && rm -rf /tmp/kvconfig-written",
        {"P": "a"},
        BOTH,
    ),
    "an unquoted default word splits at IFS in an array": (
        'A=(${K:-4 6 8}); for k in "${A[@]}"; do vllm serve "$k"; done',
        {},
        ("bash",),
    ),
    "an unquoted default word splits at IFS": (
        "for k in ${X:-a b}; do vllm serve $k; done; vllm serve ${X:-a b} x${X:- c }y\n"
        'vllm serve ${X:-"a b"} c ${Y:+p q}; IFS=,; vllm serve ${X:-a b,c}',
        {"Y": "1"},
        BOTH,
    ),
    "a subshell's own redirections": (
        "( vllm serve a ) 2>/dev/null; ( vllm serve b ) 2> err.log &\n"
        "( KV_A=1; vllm serve c ) 2>>err.log </dev/null &\nwait; vllm serve d; rm -f err.log",
        {},
        BOTH,
    ),
    "a call nested too deep leaves only what the function sets to run time": (
        'M=model; L=last; walk() { local n="$1"; [ -n "$n" ] || return 0; L=$n; walk "${n#?}"; }\n'
        'walk "$N"; vllm serve "$M"; vllm serve "$L"',
        {"N": None},
        BOTH,
    ),
    "set -eu and a function's missing argument": (
        'set -eu; f() { vllm serve "$1"; }; f a; KV_A=1 f; vllm serve never',
        {},
        BOTH,
    ),
    "case run-time": (
        'case "$GPU" in H100) vllm serve m --block-size 64;; *) vllm serve m;; esac',
        {"GPU": None},
        BOTH,
    ),
    "test numbers": (
        'N=8; if [ "$N" -ge 4 ]; then TP=4; fi; if test "$N" -lt 2; then TP=1; fi; vllm serve $TP',
        {},
        BOTH,
    ),
    "and-or": ("true && vllm serve a; false && vllm serve b; false || vllm serve c", {}, BOTH),
    "while read over a here-string": (
        "C='off 16\n\nw1  32'\n"
        'while read -r label bs; do\n  [ -z "$label" ] && continue\n'
        '  vllm serve m --block-size "$bs" --tag "$label"\ndone <<<"$C"\nvllm serve last "$label"',
        {},
        ("bash",),
    ),
    "while read over a here-document": (
        'while IFS=, read -r a b; do vllm serve "$a" "$b"; done <<EOF\nx,16\ny,32,z\nEOF\n'
        "vllm serve after",
        {},
        BOTH,
    ),
    "a program in the loop may read the input": (
        'while read -r a; do vllm serve "$a"; cat >/dev/null; done <<EOF\none\ntwo\nEOF',
        {},
        BOTH,
    ),
    "a program with its own input leaves the loop's": (
        'while read -r a; do cat </dev/null; vllm serve "$a"; done <<EOF\none\ntwo\nEOF',
        {},
        BOTH,
    ),
    "continue on one side of a run-time test": (
        'for x in a b; do [ "$X" = 1 ] && continue; vllm serve "$x"; done; vllm serve end',
        {"X": None},
        BOTH,
    ),
    "return on one side of a run-time test": (
        'f() { if [ "$X" = 1 ]; then B=16; return; fi; B=32; }\nf\nvllm serve m --block-size $B',
        {"X": None},
        BOTH,
    ),
    "break on one side of a run-time test": (
        'while true; do if [ "$X" = 1 ]; then B=1; break; fi; B=2; break; done; vllm serve $B',
        {"X": None},
        BOTH,
    ),
    "a loop whose rounds repeat": (
        "for i in 1 2 3 4; do vllm serve m; N=x; done; vllm serve $N $i",
        {},
        BOTH,
    ),
    "set --": ('set -- --block-size 16; shift; vllm serve m "$@" $#', {}, BOTH),
    "[[ && || ]]": (
        'A=; if [[ -z "$A" && -n "$H" || $X == y ]]; then B=1; else B=2; fi; '
        'if [[ -n $Q && -z $A || -z "$H" ]]; then C=3; fi; vllm serve m $B $C',
        {"H": "h", "X": "n", "Q": None},
        ("bash",),
    ),
    "a run-time path that names vllm": (
        'V=/nowhere/vllm; [ -x "$V" ] || V=$(command -v vllm || true); "$V" serve m; '
        'W=$(command -v vllm); "$W" serve n; $W serve o',
        {},
        BOTH,
    ),
    "bash -eo NAME -c": ('bash -eo pipefail -c \'vllm serve m "$0" "$1"\' n x', {}, BOTH),
    "set -euo NAME": (
        'set -euo nounset; vllm serve m "$@" $#; set -xo errexit x; vllm serve $#',
        {},
        BOTH,
    ),
    "declare readonly local": (
        "f() { local X=in; vllm serve $X; }; X=out; f; readonly Y=1; vllm serve $X $Y",
        {},
        BOTH,
    ),
    "declare bash": ("declare -x KV_A=1; declare B=2; vllm serve $B", {}, ("bash",)),
    "subshell scope": ("X=1; (X=2; vllm serve $X); vllm serve $X", {}, BOTH),
    "pipeline scope": ("X=1; X=2 | true; vllm serve $X | cat", {}, BOTH),
    "ansi-c quoting": ("vllm serve $'a\\tb' $'\\x41' $'it\\'s'", {}, ("bash",)),
    "arrays": (
        'A=(--block-size "1 6"); A+=(x); vllm serve "${A[@]}" ${A[1]} ${#A[@]} $A',
        {},
        ("bash",),
    ),
    "tilde": ("vllm serve ~/m --x=~ '~'", {}, BOTH),
    "parameter expansions": (
        "X=abc.tar.gz; vllm serve ${X%.*} ${X%%.*} ${X#*.} ${X##*.} ${#X} ${U:-d} ${U-e} "
        '${X:+alt} "${E:=set}" $E',
        {},
        BOTH,
    ),
    "brace expansion": (
        "for i in {0..2}; do vllm serve m --data-parallel-rank $i; done\n"
        'vllm serve a{b,c}d {01..03} {c..a} "{1..2}" {1..5..2} {x} {} x{a,"b c"}',
        {},
        BOTH,
    ),
    "brace expansion over quoted text and expansions": (
        'V=v; vllm serve --j {"k":"a","r":"b"} {$V,w}x {"a,b"} y{\'p q\',"$V"}z\n'
        "vllm serve {a,{b,c}} {1..$V}",
        {},
        BOTH,
    ),
    "a locale string and a brace with a quoted comma": (
        'vllm serve $"loc" a$"b c"d x{"c,d"..e} "$"',
        {},
        BOTH,
    ),
    "sed over echo's output": (
        'P=$(echo "--port 1 --x a/b" | sed -e "s/--port [0-9]*/--port 2/" | cat)\n'
        'Q=$(echo "--port 1 --x a/b" | sed "s|a/\\(b\\)|\\1|g"); vllm serve m $Q $P\n'
        'R=$(echo "Qwen/Qwen3-8B" | sed -E "s/([^/]+)\\/(.*)/\\2 \\1/"); vllm serve $R',
        {},
        BOTH,
    ),
    "env without a command prints, exec without one only redirects": (
        "env | grep -c PATH > /dev/null || true\nenv > /dev/null; env -u X > /dev/null\n"
        "exec 2> /dev/null; exec 3> /dev/null\nvllm serve m; exec vllm serve last; vllm serve no",
        {},
        BOTH,
    ),
    "arithmetic for": (
        "for ((i=0; i<N; i++)); do vllm serve m --rank $((i + 10)); done\n"
        "for (( j = 5 ; j > 1 ; j -= 2 )) ; do vllm serve j$j; done; for ((;;)); do break; done",
        {"N": "3"},
        ("bash",),
    ),
    "arithmetic for on a run-time bound": (
        "for ((i=0; i<N; i++)); do vllm serve m --rank $i; done",
        {"N": None},
        ("bash",),
    ),
    "cat of a here-document in a substitution": (
        'P=7\nK=$(cat <<EOF\n{"a": $P}\nEOF\n)\nvllm serve m --kv "$K"\n'
        'Q=$(cat <<"EOF"\n$P x\nEOF\n); vllm serve "$Q"\nR=$(cat <<-EOF\n\ta $(echo b)\n\tEOF\n)\n'
        'vllm serve $R; S=$(cat <<EOF\n$U\nEOF\n); vllm serve s "$S"',
        {"U": None},
        BOTH,
    ),
    "a here-string to cat": ('R=$(cat <<< "a  b"); vllm serve $R "$R"', {}, ("bash",)),
    'a function\'s "$@" with an argument only known at run time': (
        'run() { l=$1; shift; "$@" > /dev/null 2>&1 & }\n'
        'run log env KV_A=1 vllm serve m --kv "$U" --port 1\nwait',
        {"U": None},
        BOTH,
    ),
    "commands of redirections alone": (
        "vllm serve a --port 1\n>/dev/null 2>&1 &\n2>/dev/null; vllm serve b\n"
        "if true; then >/dev/null; fi; 2>/dev/null | vllm serve c; wait",
        {},
        BOTH,
    ),
    "a polling for (( )) that a run-time answer leaves": (
        'up() { for ((i=0; i<300; i++)); do if [ "$UP" = "$i" ]; then return 0; fi; done\n'
        "  return 1; }\nup && vllm serve m --i $i\nup || vllm serve n --i $i; vllm serve o",
        {"UP": None},
        ("bash",),
    ),
    "[[ == ]] on a string": (
        'if [[ "${D:-cuda}" == "xpu" ]]; then W=KV_A=x; else W=KV_A=c; fi\n'
        'env "$W" vllm serve m; [[ abc != ab"c" ]] || vllm serve n\n'
        "[[ abc == a* ]] && vllm serve p; [[ a{b,c} == 'a{b,c}' ]] && vllm serve q",
        {"D": None},
        ("bash",),
    ),
    "[[ == ]] on a known string": (
        'if [[ "${D:-cuda}" == "xpu" ]]; then W=KV_A=x; else W=KV_A=c; fi\nenv "$W" vllm serve m',
        {},
        ("bash",),
    ),
    "bash expansions": ("X=abcabc; vllm serve ${X/b/B} ${X//b/B} ${X:1:3} ${X^^}", {}, ("bash",)),
    "required variable unset": ('vllm serve "${MODEL:?set MODEL}"', {}, BOTH),
    "eval": ('ARGS="--block-size 16 --x \'{\\"a\\": 1}\'"; eval "vllm serve m $ARGS"', {}, BOTH),
    "wrappers": (
        "exec timeout 100 numactl --cpunodebind=0 taskset -c 0 nice -n 5 setsid stdbuf -oL "
        "tini -s -- dumb-init vllm serve m",
        {},
        BOTH,
    ),
    "env wrapper": ("env KV_A=1 KV_B=2 vllm serve m", {}, BOTH),
    "nested shell": (
        'KV_C=3; export KV_C; bash -o pipefail -xc "vllm serve \\$KV_C" 2>/dev/null',
        {},
        BOTH,
    ),
    "nested shell, -- before the script": (
        'KV_C=4; export KV_C; sh -c -x -- "vllm serve \\$KV_C" 2>/dev/null',
        {},
        BOTH,
    ),
    "background engines": (
        "vllm serve a --port 8000 & vllm serve b --port 8001 & wait",
        {},
        BOTH,
    ),
    "for loop of engines": (
        "for i in 0 1 2; do KV_A=$i vllm serve m --port $((8000 + i)) & done; wait",
        {},
        BOTH,
    ),
    "parentheses in arithmetic": (
        "n() { echo 3; }; vllm serve m --port $((7 % $(echo 3))) --x $(( (1+2)*(3) )) $((((1))))",
        {},
        BOTH,
    ),
    "while loop": ('i=0; while [ "$i" -lt 2 ]; do vllm serve $i; i=$((i+1)); done', {}, BOTH),
    "export scope": ("export KV_A=1; KV_B=2; KV_C=3 vllm serve m; vllm serve n", {}, BOTH),
    "IFS": ('IFS=:; X="a:b::c"; vllm serve $X', {}, BOTH),
    "run-time test keeps branches apart": (
        'if [ -f /nonexistent/flag ]; then X=1; else X=2; fi; vllm serve "$X"',
        {},
        BOTH,
    ),
    "exit stops": ('[ -n "$Q" ] || exit 0; vllm serve m', {"Q": None}, BOTH),
    "function with args": ('run() { vllm serve "$1" --tp "$2"; }; run m 4', {}, BOTH),
    "a shift dash may refuse": (
        'if [ -n "$Q" ]; then set -- x; fi; if [ -n $Q ]; then shift; fi; vllm serve m',
        {"Q": None},
        BOTH,
    ),
    "case * on a run-time word": (
        'case "$Q" in a) vllm serve a;; *) shift;; esac; vllm serve m',
        {"Q": None},
        BOTH,
    ),
    "export on one side of a run-time branch": (
        "if [ -n $KV_A ]; then unset KV_A; fi; KV_A=''; vllm serve m",
        {"KV_A": None},
        BOTH,
    ),
    "double bracket": (
        "if [[ $X == a* ]]; then vllm serve 1; else vllm serve 2; fi",
        {"X": "ab"},
        ("bash",),
    ),
    "double bracket patterns, quoted parts literal": (
        "Y='a*'; Z=ab.c\n"
        '[[ $Z == a* ]] && vllm serve 1; [[ $Z == "a*" ]] && vllm serve 2\n'
        "[[ $Z = *.c ]] && vllm serve 3; [[ $Z != hf_* ]] && vllm serve 4\n"
        '[[ ! $Z == $Y ]] || vllm serve 5; [[ $Z == "$Y" ]] || vllm serve 6\n'
        '[[ "a b" == "a b" ]] && vllm serve 7; [[ $Z == a?.[bc] ]] && vllm serve 8\n'
        "[[ ${Z^^} == AB* ]] && vllm serve 9; [[ $U == '' ]] && vllm serve 10",
        {},
        ("bash",),
    ),
    "double bracket token check": (
        'if [[ "$HF_TOKEN" != hf_* ]]; then exit 1; fi; vllm serve m',
        {"HF_TOKEN": "hf_abc"},
        ("bash",),
    ),
    "IFS is space, tab, newline in a new shell, whatever the environment says": (
        'X=a:b; vllm serve "[$IFS]" $X; sh -c \'Y=c:d; vllm serve "[$IFS]" $Y\'',
        {"IFS": ":"},
        BOTH,
    ),
    "IFS set in the script": ('IFS=:; X=a:b; vllm serve "[$IFS]" $X', {}, BOTH),
    "read -a from a here-string, a loop over the indices": (
        "G=${G:-1,2,3}; IFS=',' read -ra ARR <<< \"$G\"\n"
        'for i in "${!ARR[@]}"; do KV_A=$i vllm serve "${ARR[$i]}" --port $((22001 + i)) & done\n'
        'wait; read -r -a B <<< " a  b ,c"; vllm serve "${#B[@]}" "${B[@]}"\n'
        'IFS=, read -a C <<< "x,,y,"; vllm serve "${!C[@]}" "${C[@]}" ${!C[*]} "${!U[@]}" e',
        {"G": "7,8"},
        ("bash",),
    ),
    "here-strings after compound commands": (
        'while read -r l; do vllm serve "$l"; done <<< "a b"; { vllm serve b; } <<< x\n'
        "if true; then vllm serve c; fi <<< y; for i in 1; do vllm serve $i; done <<<z\n"
        "cat <<< x | vllm serve d; vllm serve e <<< 'f g'",
        {},
        ("bash",),
    ),
    "read -a from a run-time here-string": (
        "IFS=',' read -ra ARR <<< \"$G\"\n"
        'for i in "${!ARR[@]}"; do vllm serve "${ARR[$i]}" & done; wait; vllm serve end',
        {"G": None},
        ("bash",),
    ),
    "double bracket on a run-time value": (
        '[[ "$HF_TOKEN" != hf_* ]] && exit 1; vllm serve m',
        {"HF_TOKEN": None},
        ("bash",),
    ),
    "double bracket, a pattern with no pattern character": (
        'if [[ "${X,,}" == "xpu" ]]; then A=KV_A; else A=KV_B; fi; env "$A=1" vllm serve m',
        {"X": "XPU"},
        ("bash",),
    ),
    "double bracket !=, unquoted literal": (
        "if [[ $X != cuda ]]; then vllm serve 1; else vllm serve 2; fi",
        {"X": "cuda"},
        ("bash",),
    ),
    "double bracket after shopt nocasematch": (
        "shopt -s nocasematch; if [[ $X == cuda ]]; then vllm serve 1; else vllm serve 2; fi",
        {"X": "CUDA"},
        ("bash",),
    ),
    "cd: $PWD, $OLDPWD and pwd where it went, not where it failed": (
        'vllm serve "$PWD"; cd /usr && vllm serve "$PWD" "$(pwd)" "$OLDPWD"\n'
        '(cd / || exit; vllm serve sub "$PWD"); vllm serve "$PWD"\n'
        'cd /nonexistent || vllm serve failed "$PWD"; cd /usr || exit 1\n'
        'cd - && vllm serve "$PWD"\n'
        'cd /usr || exit; cd ./lib/.. || exit; cd bin || exit; vllm serve "$PWD" "$OLDPWD"\n'
        'cd -P /usr/./bin/ || exit; vllm serve "$PWD"; cd //usr || exit; vllm serve "$PWD" $(pwd)\n'
        'cd -L ///usr/../etc || exit; vllm serve "$PWD" "$(cd .. && pwd)" "$(cd - && pwd)" "$PWD"\n'
        'vllm serve "$(cd /usr >/dev/null 2>&1 && pwd)" "$(cd /etc >/dev/null; pwd -P)"\n'
        'vllm serve "$(cd /nonexistent 2>/dev/null >/dev/null && pwd)" "$(cd - >/dev/null && pwd)"',
        {},
        BOTH,
    ),
    "cd with CDPATH, to $HOME, and with a run-time folder": (
        'cd /usr || exit; cd bin || exit; vllm serve "$PWD"; cd; vllm serve "$PWD"\n'
        'vllm serve "$(cd usr >/dev/null && pwd)" "$(cd usr && pwd)"\n'
        'cd "$D" && vllm serve "$PWD"; cd /usr && cd "$D" || exit; vllm serve "$PWD" "$OLDPWD"',
        {"CDPATH": "/", "D": None},
        BOTH,
    ),
    "sh -c of a text with run-time parts, as eval reads it": (
        'C="vllm serve $D --port 1"; bash -c "$C"; f() { sh -c "$1"; }; f "vllm serve x$D"\n'
        'sh -c "vllm serve $D --port 2 && vllm serve 3"\n'
        'g() { eval "$1 --port 4"; }; g "vllm serve $D"',
        {"D": None},
        BOTH,
    ),
    "a for (( )) whose step or test bash refuses ends there": (
        "for ((i=0; i < 4; i=i+{x})); do vllm serve $i; done; vllm serve after $?\n"
        "set -e; for ((i=0; i < {x}; i++)); do vllm serve $i; done; vllm serve after2 $?\n"
        "for ((i=0; i < 4; i=i+1.5)); do vllm serve x$i; done; vllm serve end",
        {},
        ("bash",),
    ),
    "printf -v and %q (bash)": (
        'printf -v A "%s-%s" x y; printf -v B "%q " vllm serve m/x --port 8000 ""; eval "$B"\n'
        'vllm serve "$A"; printf -v C %q "a b"; vllm serve "$C"\n'
        'printf -v D -- %s%%; vllm serve "$D"\n'
        'printf -v E "%q" "$R"; vllm serve "[$E]"; f() { printf "%q/%s" "$1" "$2"; }\n'
        'vllm serve "$(f m x)" "$(printf %q:%q m)"',
        {"R": None},
        ("bash",),
    ),
    "cd with its output sent away in $(cd DIR &>/dev/null && pwd)": (
        'vllm serve "$(cd /usr &>/dev/null && pwd)"\n'
        'vllm serve "$(cd -- "$(dirname -- /etc/x)" &> /dev/null && pwd)"',
        {},
        ("bash",),
    ),
    "cd in a function, a nested shell and a pipeline": (
        'go() { cd "$1" || return; }; go /usr && vllm serve "$PWD"; cd /etc | vllm serve "$PWD"\n'
        'cd / && sh -c \'vllm serve "$PWD" "$(pwd)"\'; pushd /usr; vllm serve "$PWD"',
        {},
        BOTH,
    ),
    "[[ =~ ]] and BASH_REMATCH": (
        "V=v0.6.1-rc2; if [[ $V =~ ^v([0-9]+)\\.([0-9]+)(\\.[0-9]+)?-?(rc[0-9])?$ ]]; then\n"
        '  vllm serve "${BASH_REMATCH[0]}" "${BASH_REMATCH[1]}" "${BASH_REMATCH[3]}"\n'
        '  vllm serve "${BASH_REMATCH[@]}"; fi\n'
        "[[ Qwen/Qwen3-8B =~ /([A-Za-z]+)([0-9]*)-([0-9]+)[bB]$ ]]\n"
        'vllm serve "${BASH_REMATCH[@]}"\n'
        're="^a.b$"; [[ axb =~ $re ]] && vllm serve 1; [[ axb =~ "$re" ]] || vllm serve 2\n'
        '[[ ! ab =~ a ]] || vllm serve 3 "${#BASH_REMATCH[@]}"\n'
        '[[ ab =~ x ]] || vllm serve 4 "${#BASH_REMATCH[@]}"\n'
        '[[ abx =~ a|x ]] && vllm serve 5 "${BASH_REMATCH[0]}"; [[ ab =~ a( b) ]] || vllm serve 6\n'
        "[[ \"a{\" =~ a{ ]]; vllm serve 7 $?; [[ $'a\\nb' =~ ^a.b$ ]] && vllm serve 8\n"
        '[[ aab =~ a?(ab)? ]] && vllm serve 9 "${BASH_REMATCH[@]}"\n'
        "[[ $'a\\n' =~ ^a$ ]] || vllm serve 10\n"
        '[[ "${D}x" =~ ^[[:digit:]]+x ]] && vllm serve 11 "${BASH_REMATCH[@]}"\n'
        '[[ "]-" =~ []a-]+ ]] && vllm serve 12\n'
        '[[ $D =~ ^(a|b)$ ]] && vllm serve 13 "${BASH_REMATCH[1]}"\n'
        'vllm serve 14 "${BASH_REMATCH[@]}"',
        {"D": None},
        ("bash",),
    ),
    "associative arrays and array elements (declare -A, NAME[SUB]=value)": (
        "declare -A T=([8192,1024,4]=TP8 [8192,1024,8]=DP4TP2 [x]=)\n"
        'I=8192; O=1024; C=4; vllm serve 1 "${T[$I,$O,$C]}" "${T[x]-unset}" "${#T[@]}"\n'
        'T[new]=n; T[8192,1024,4]+=_EP; T["q"]=quoted\n'
        'vllm serve 2 "${T[new]}" "${T[$I,1024,4]}" "${T[missing]:-d}" "${T[q]}" "${#T[x]}"\n'
        'unset \'T[new]\'; vllm serve 3 "${T[new]-unset}" "${#T[@]}"\n'
        'declare -A U; U[k]=v; vllm serve 4 "${U[@]}" "${!U[@]}" "${U[k]}" "${#U[@]}"\n'
        'if [ "$D" = 16 ]; then U[k]=w; fi; vllm serve 5 "${U[k]}"\n'
        'A[0]=a; A[1]=b; A[1]+=c; A[-1]+=d; vllm serve 6 "${A[@]}" "${#A[@]}" "${A[1]}"\n'
        'f() { T[fn]=1; }; f; vllm serve 7 "${T[fn]}"; declare -A T; vllm serve 8 "${T[fn]}"\n'
        'unset T; vllm serve 9 "${T[8192,1024,4]:-gone}"\n'
        'declare -A V=([$D]=1 [a]=2); vllm serve 10 "${V[a]}"; W[1]=$D; vllm serve 11 "${W[1]}"\n'
        'declare -A Z=(["a b"]=1); vllm serve 12 "${Z[a b]}"\n'
        'declare -A Y=(); vllm serve 13 "${#Y[@]}"; U+=([j]=w); vllm serve 14 "${U[j]}"\n'
        'Y=([a]=1 [b]=2); Y+=([a]=3); vllm serve 15 "${Y[a]}" "${Y[b]}" "${#Y[@]}"',
        {"D": None},
        ("bash",),
    ),
    "GNU getopt's output and eval set --": (
        'set -- --model m/x -t 2 pos --fl=3 "a b" -h\n'
        'TEMP=$(getopt -o t:h --long model:,flag::,help -n x -- "$@")\n'
        "if [ $? -ne 0 ]; then exit 1; fi\n"
        'eval set -- "$TEMP"\n'
        'while true; do case "$1" in --model) M=$2; shift 2;; -t) T=$2; shift 2;;\n'
        "  --flag) F=$2; shift 2;; -h) H=1; shift;; --) shift; break;; *) exit 1;; esac; done\n"
        'vllm serve "$M" --tensor-parallel-size "$T" --x "$F" "$H" "$@"\n'
        'O=$(getopt -o a: -- -a "$D" rest); vllm serve "$O"\n'
        "getopt -o a -- -b >/dev/null 2>&1 || vllm serve failed\n"
        'B=$(getopt -o a -- -z); vllm serve after "$?" "$B"',
        {"D": None},
        BOTH,
    ),
    "a server started inside $(...) goes on": (
        'exec 3>&1; start() { vllm serve m --port "$1" >&3 & echo $!; }\n'
        'P=$(start 1); Q="$(start 2)"; for i in 3 4; do R=$(start $i); done\n'
        'S=$(start "$D"); T=$(start "${D}_$$" x); wait',
        {"D": None},
        BOTH,
    ),
    "read from here-documents": (
        'X=v; IFS=, read a b <<EOF\nx,y,\nEOF\nvllm serve "$a" "$b"\n'
        'read c <<\'EOF\'\n$X \\q "$X"\nEOF\nvllm serve "$c"\n'
        'read d <<EOF\na\\b c\\\nd\nEOF\nvllm serve "$d"\n'
        'read e f <<-EOF\n\t\t  tab  $X "$X"  $KV_A\n\tEOF\nvllm serve "$e" "$f"\n'
        'read g <<EOF\nEOF\nvllm serve "[$g]" $?\n'
        'read h i j <<EOF\none\nEOF\nvllm serve "$h$i$j"\n'
        'IFS=, read k l <<EOF\nx,,\nEOF\nvllm serve "[$k][$l]"\n'
        "IFS=', ' read m n <<EOF\n x , y , z \nEOF\nvllm serve \"[$m][$n]\"\n"
        'cat <<EOF >/dev/null\n$((1+1)) ${Q:=x} $(date) "\nEOF\n'
        'vllm serve end "$Q"',
        {"KV_A": None},
        BOTH,
    ),
    "read -d, and read from here-strings": (
        "read -r -d '' ARGS <<EOF || true\n  --block-size 16\n  --model \"$X\"\nEOF\n"
        'vllm serve $ARGS; read -d , p q <<< \'a b,c\'; vllm serve "$p" "$q" $?\n'
        'read -r r s <<< \'  p  q  r  \'; vllm serve "[$r]" "[$s]"\n'
        'read <<< \' t \'; vllm serve "$REPLY"; f() { :; }; f <<< "${S:=z}"\n'
        'cat <<< "${T:=t}"; vllm serve "$S" "$T"',
        {},
        ("bash",),
    ),
    "eval of a command built around a run-time value": (
        'C="vllm serve m --block-size $BS"; C="$C --port 1"\n'
        'if [ -n "$Q" ]; then C="$C -q"; fi; eval "$C &"; wait',
        {"BS": None, "Q": None},
        BOTH,
    ),
    "eval of a run-time value in quotes": (
        "KV=$X; eval \"vllm serve m --kv-transfer-config '$KV' --block-size 16\"",
        {"X": None},
        BOTH,
    ),
    "eval of a run-time value before the command": (
        'G=$GPU; C="CUDA_VISIBLE_DEVICES=$G vllm serve m"; eval "$C"; eval "$GPU"',
        {"GPU": None},
        BOTH,
    ),
    "eval of a command appended to with +=": (
        'C="vllm serve m"; C+=" -tp $TP"; C+=" --port 1"; eval "$C"',
        {"TP": None},
        ("bash",),
    ),
    "the output of a function of the script": (
        'f() { local a="--block-size $1"; echo "$a"; }; A=$(f 16); vllm serve m $A\n'
        'B=$(f); vllm serve m $B; g() { echo 8; exit 1; echo 9; }; vllm serve "$(g)" 1\n'
        'n() { echo -n 1; echo " 2"; printf \'%s\\n\' 3; }; vllm serve "$(n)"',
        {},
        BOTH,
    ),
    "a function's output only known at run time": (
        "e() { echo x >&2; echo 16; }; vllm serve $(e)\n"
        "p() { echo a | tr a b; }; vllm serve $(p)\n"
        'k() { if [ -n "$X" ]; then echo 1; fi; echo 2; }; vllm serve $(k)\n'
        "b() { echo '1\\n2'; }; vllm serve \"$(b)\"; r() { uname; }; vllm serve $(r)",
        {"X": None},
        BOTH,
    ),
    "echo through tr": (
        'K=\'{ "a": [1, 2] }\'; K=$(echo "$K" | tr -d \'[:space:]\'); vllm serve "$K"\n'
        "U=$(echo vllm | tr a-z A-Z); L=$(echo \"$U x\" | tr '[:upper:]' '[:lower:]')\n"
        'vllm serve "$U" "$L" "$(echo a.b | tr . /)" "$(echo ab | tr -s b)"',
        {},
        BOTH,
    ),
    "assignments after local and export are not split": (
        'f() { local kv=$1 s=$2; export e=$2; vllm serve "[$kv]" "[$s]" "[$e]" $kv; }\n'
        'f "a[1]" "x  y"; f "*" "$R"',
        {"R": None},
        BOTH,
    ),
    "an array declared local": (
        'f() { local a="$1"; shift; local x=("$@") y=(k "$a"); declare -a z=(1 "$#")\n'
        '  vllm serve m "${x[@]}" "${y[@]}" "${#x[@]}" "${z[@]}"; }\n'
        'x=(out); f a --block-size "3 2"; f b; vllm serve "${x[@]}" "${y[@]-unset}" "${z[@]}"',
        {},
        ("bash",),
    ),
    "a function called with a run-time argument": (
        'f() { local m=$1 k=$2; C="vllm serve $m --kv \'$k\' --n $#"; eval "$C &"; }\n'
        'f m "$KV_A"; f m $KV_A; for x; do :; done; wait',
        {"KV_A": None},
        BOTH,
    ),
    "-o in a cluster of dash's options": (
        'set -oo errexit nounset x y; vllm serve "$1" "$#"\n'
        'sh -oo errexit nounset -c \'vllm serve "$0" "$1"\' a b; set -eo pipefail z; vllm serve $1',
        {},
        ("dash",),
    ),
    "-o at the end of a cluster of bash's options": (
        'set -euo pipefail a b; vllm serve "$1" $#\n'
        'bash -eo pipefail -c \'vllm serve "$0" "$1"\' a b',
        {},
        ("bash",),
    ),
    "cd after cd in an and-or list": (
        'cd /usr && cd bin && vllm serve "$PWD"; cd / && cd /nonexistent || vllm serve "$PWD"',
        {},
        BOTH,
    ),
    "a pipeline, a function and a group in the background": (
        'vllm serve a | cat &\nf() { exec vllm serve "$1"; }; f b 2> /dev/null &\n'
        "{ vllm serve c; } & vllm serve d; wait",
        {},
        BOTH,
    ),
    "seq in a for loop and env settings": (
        'for i in $(seq 0 2); do env KV_A=$i vllm serve "$i" & done; wait\n'
        "for j in $(seq 3); do vllm serve $j; done; vllm serve $(seq 5 -2 1) $(seq 2 1)",
        {},
        BOTH,
    ),
    "env given a run-time value": (
        'V=KV_B; env ${V}=$X KV_A="$X" vllm serve m & env KV_A=$X vllm serve "$X"; wait',
        {"X": None},
        BOTH,
    ),
    "arithmetic commands and loops over expansions": (
        "c=(a b c); n=1; (( n = $n + 1 )); vllm serve a$n; i=0\n"
        "while (( i < ${#c[@]} )); do vllm serve w$i; (( i++ )); done; (( 0 )) || vllm serve z\n"
        "(( i-- )) && vllm serve p$i; (( --i )) || vllm serve q$i\n"
        "for ((k = ${#c[@]}; k > $n; k--)); do vllm serve k$k; done\n"
        "(( x = $X + 1 )); vllm serve x$x; ((echo s); vllm serve sub)",
        {"X": None},
        ("bash",),
    ),
    "a polling while loop with a counter": (
        'n=0; while true; do if [ "$X" = 16 ]; then break; fi; n=$((n + 1))\n'
        "if (( n >= 3 )); then break; fi; sleep 0; done; vllm serve m$n; vllm serve after",
        {"X": None},
        ("bash",),
    ),
    "a shell's own -e and -u, as set takes them": (
        "bash -e -c 'false; vllm serve a'; sh -ec 'false\nvllm serve b'; "
        "bash -c 'false; vllm serve c'\n"
        "sh -uc 'vllm serve \"$X\" d'; bash +e -c 'false; vllm serve e'; "
        "sh -o errexit -c 'false; vllm serve f'; bash -eu -c 'vllm serve g \"$0\"' z",
        {},
        BOTH,
    ),
    "set -e ends at a failure outside a test": (
        'set -e; f() { [ "$1" = x ] && echo hi; }; false || true; if false; then :; fi\n'
        "while false; do :; done; ! true; true && false || true; (( 0 )) || :; false | true\n"
        "vllm serve a; f x; vllm serve b; set +e; false; vllm serve c; set -o errexit\n"
        "g() { return 3; }; g && :; vllm serve d; g; vllm serve e",
        {},
        ("bash",),
    ),
    "set -e in dash": (
        'set -eu; [ -n "${K:-}" ] || vllm serve a; test -n "${K:-}"; vllm serve b',
        {},
        BOTH,
    ),
    "an array holding run-time elements": (
        'A=(--model "m-$X" -tp 2 "$X" --port "$X"); A+=("--b=$X" c); vllm serve "${A[@]}"\n'
        'vllm serve "${A[1]}" ${#A[@]} "${A[2]}"; B=($X y); vllm serve "${B[@]}" ${#B[@]}\n'
        'vllm serve "${A[*]}" ${A[@]} "${A[@]:1}"; C=("$X" z); vllm serve "$C" "${C[1]}"',
        {"X": None},
        ("bash",),
    ),
    "an array's elements or a default": (
        'A=(); vllm serve m ${A[@]+"${A[@]}"} x; B=("p q" r); vllm serve ${B[@]+"${B[@]}"}\n'
        'vllm serve ${C[@]:-d} ${B[*]+"${B[*]}"}',
        {},
        ("bash",),
    ),
    "a run-time path that names vllm, and printf": (
        'R=$(dirname "$(command -v vllm)"); "$R/vllm" serve a; $R/vllm serve a2\n'
        'V=$(command -v vllm); C="KV_A=1 $V serve b"; eval "$C &"; wait\n'
        'f() { printf \'{"p":%s,"h":"%s"}\' "$1" "$2"; }; K=$(f 7 h)\n'
        'vllm serve "$K" "$(printf \'%s-%s\\n\' x y z)" "$(printf \'a%%b\')" "$(echo e f)" \\\n'
        '  "$(printf -- -%s x)"',
        {},
        BOTH,
    ),
    "return inside a loop leaves the function": (
        "f() { for i in 1 2; do while true; do return; done; vllm serve no; done; }\n"
        "f; vllm serve yes",
        {},
        BOTH,
    ),
}


@pytest.mark.parametrize("name", TABLE, ids=TABLE.keys())
def test_table_against_real_shells(name: str, bindir: Path) -> None:
    script, env, shells = TABLE[name]
    check(script, env, bindir, shells)


@pytest.mark.parametrize("value", ["]", "5x", "a", "-", "x", "*", "!", "&"])
def test_bracket_expressions_match_as_the_shells_match(value: str, bindir: Path) -> None:
    script = TABLE["bracket expressions of patterns"][0]
    check(script, {"K": value, "J": value}, bindir, BOTH)


def test_associative_arrays_are_decided_where_bash_decides_them() -> None:
    """The table's case agrees with bash, and what bash decides kvconfig decides too: the
    lookups by known keys, ``+=``, ``unset 'T[k]'``, one key's ``${!U[@]}``; left to run
    time only a branch's element, an unset indexed lookup by ``,`` and a run-time value."""
    script = TABLE["associative arrays and array elements (declare -A, NAME[SUB]=value)"][0]
    reading = read_script(script, {"HOME": _HOME, "D": None}, dialect="bash")
    sure = [c.words[2] for c in reading.commands if not c.unknown and not c.when]
    assert sure == ["1", "2", "3", "4", "6", "7", "8", "10", "12", "13", "14", "15"]


def test_the_issue_case_is_decided_not_guessed() -> None:
    script = TABLE["if on a known value"][0]
    (cmd,) = read_script(script, {"PROFILE": "throughput"}).commands
    assert cmd.words[-1] == "128"
    (cmd,) = read_script(script, {"PROFILE": None}).commands
    assert cmd.words[4] == "$BS" and cmd.unknown == ((4, "$BS"),)


def test_eval_reads_the_known_text_around_run_time_values() -> None:
    script = TABLE["eval of a command built around a run-time value"][0]
    reading = read_script(script, {"BS": None, "Q": None})
    assert reading.blind == ()
    words = {c.words: c for c in reading.commands}
    assert set(words) == {
        ("vllm", "serve", "m", "--block-size", "$BS", "--port", "1"),
        ("vllm", "serve", "m", "--block-size", "$BS", "--port", "1", "-q"),
    }
    assert all(c.unknown == ((4, "$BS"),) and c.background for c in words.values())
    script = TABLE["eval of a run-time value before the command"][0]
    first = read_script(script, {"GPU": None}).commands[0]
    assert first.words == ("vllm", "serve", "m") and first.env["CUDA_VISIBLE_DEVICES"] is None
    assert first.when  # a blank in $GPU would end the assignment: bash would run another program


def test_a_run_time_path_naming_vllm_and_printf_are_read() -> None:
    script = TABLE["a run-time path that names vllm, and printf"][0]
    for dialect in ("bash", "sh"):
        reading = read_script(script, {}, dialect=dialect)
        runs = {c.words: c for c in reading.commands if c.words[0] == "vllm"}
        assert set(runs) == {
            ("vllm", "serve", "a"),
            ("vllm", "serve", "a2"),
            ("vllm", "serve", "b"),
            ("vllm", "serve", '{"p":7,"h":"h"}', "x-y\nz-", "a%b", "e f", "$(printf -- -%s x)"),
        }  # printf with an option (--) is left to run time
        assert runs[("vllm", "serve", "a")].when == ()  # quoted: one word, whatever the path
        assert runs[("vllm", "serve", "a2")].when  # unquoted: a blank in the path splits it
        assert runs[("vllm", "serve", "b")].background and runs[("vllm", "serve", "b")].env


def test_each_eval_of_a_run_time_program_starts_one_server() -> None:
    """Two evals of a command whose program is one of three run-time paths: each eval
    starts one server whichever path it is, so the script starts two."""
    from kvconfig.load.shell import servers

    script = (
        'if [ -x "$R/.venv/bin/vllm" ]; then V="$R/.venv/bin/vllm"; elif [ -x /w/vllm ]; then\n'
        "  V=/w/vllm; else V=$(command -v vllm); fi\n"
        'for p in 1 2; do C="KV_A=$p $V serve m --port $p"; eval "$C &"; done'
    )
    cmds = read_script(script, {"R": None}, dialect="bash").commands
    assert len(cmds) == 6
    found, problem = servers(cmds, lambda c: "serve" in c.words)
    assert problem == ""
    assert [c.words[1:] for c in found] == [
        ("serve", "m", "--port", "1"),
        ("serve", "m", "--port", "2"),
    ]
    # two servers on one side of a choice, one on the other: how many run is not known
    script = 'if [ "$X" = a ]; then vllm serve p & vllm serve d & else vllm serve x & fi'
    cmds = read_script(script, {"X": None}, dialect="bash").commands
    found, problem = servers(cmds, lambda c: True)
    assert "depends on values only known at run time" in problem


def test_a_function_s_output_is_read_when_it_only_echoes() -> None:
    for dialect in ("bash", "sh"):
        script = TABLE["the output of a function of the script"][0]
        runs = [c.words[2:] for c in read_script(script, {}, dialect=dialect).commands]
        assert runs == [("m", "--block-size", "16"), ("m", "--block-size"), ("8", "1"), ("1 2\n3",)]
        script = TABLE["a function's output only known at run time"][0]
        vllm = [
            c
            for c in read_script(script, {"X": None}, dialect=dialect).commands
            if c.words[0] == "vllm"
        ]
        # echo '1\n2': bash prints the backslash as it is, dash reads it as an escape
        assert [len(c.unknown) for c in vllm] == [1, 1, 1, dialect == "sh", 1]


def test_each_cd_of_an_and_or_list_carries_its_folder() -> None:
    script = TABLE["cd after cd in an and-or list"][0]
    first, second, third = read_script(script, {}).commands
    assert first.words[2] == "/usr/bin" and first.when  # each cd may fail where it runs
    # cd / went, cd /nonexistent failed: /; cd / failed: wherever the first list left it
    assert second.words[2] == "/" and third.unknown == ((2, "$PWD"),)


def test_what_an_ampersand_ends_runs_in_the_background() -> None:
    script = TABLE["a pipeline, a function and a group in the background"][0]
    runs = {c.words[-1]: c.background for c in read_script(script, {}).commands}
    assert runs == {"a": True, "cat": True, "b": True, "c": True, "d": False}


def test_seq_is_computed() -> None:
    script = TABLE["seq in a for loop and env settings"][0]
    runs = [(c.words[2:], c.env.get("KV_A")) for c in read_script(script, {}).commands]
    assert runs[:3] == [(("0",), "0"), (("1",), "1"), (("2",), "2")]
    assert [w for w, _ in runs[3:]] == [("1",), ("2",), ("3",), ("5", "3", "1")]


def test_run_time_arguments_and_filters_are_read() -> None:
    for dialect in ("bash", "sh"):
        script = TABLE["echo through tr"][0]
        first, second = read_script(script, {}, dialect=dialect).commands
        assert first.words[2:] == ('{"a":[1,2]}',)
        assert second.words[2:4] == ("VLLM", "vllm x") and len(second.unknown) == 1  # tr -s
        script = TABLE["a function called with a run-time argument"][0]
        reading = read_script(script, {"KV_A": None}, dialect=dialect)
        (cmd,) = [c for c in reading.commands if c.words[0] == "vllm"]
        assert cmd.words == ("vllm", "serve", "m", "--kv", "$k", "--n", "2")
        assert cmd.unknown == ((4, "$k"),)
        # f m $KV_A: as many arguments as the value has fields, only known at run time
        assert reading.blind == ("the function f called with $KV_A",)


# ----- generated scripts ---------------------------------------------------------------
_NAMES = ("KV_A", "KV_B", "X")
_VALUES = ("", "16", "a b", "throughput", "-x", "1")


def _q(text: str) -> str:
    return "'" + text.replace("'", "'\\''") + "'"


_value = st.sampled_from(_VALUES).map(_q)
_name = st.sampled_from(_NAMES)
_ref = st.builds(
    lambda n, form, v: form.format(n=n, v=v),
    _name,
    st.sampled_from(
        [
            "${n}",
            '"${n}"',
            "${{{n}:-{v}}}",
            '"${{{n}-{v}}}"',
            "${{{n}:+{v}}}",
            "${{#{n}}}",
            '"${{{n}#?}}"',
            '"${{{n}%?}}"',
        ]
    ),
    st.sampled_from(["d", "'x y'", '"$KV_A"']),
)
_word = st.one_of(
    _value,
    _ref,
    st.sampled_from(["m", "--block-size", "'{\"k\": 1}'", '"$@"', "$#", '"$PWD"', "$OLDPWD"]),
)
_piece = st.sampled_from(["m", "--block-size", "16", "$KV_A", "${KV_B:-d}", "'$X'", "$#", "-x"])
"""A word of a command kept in a variable for eval (inside its double quotes)."""
_cond = st.one_of(
    st.builds(lambda r, v: f"[ {r} = {v} ]", _ref, _value),
    st.builds(lambda r: f"[ -n {r} ]", _ref),
    st.builds(lambda r: f'[ -z "{r}" ]', _ref.filter(lambda r: '"' not in r)),
    st.builds(lambda r, v: f"test {r} != {v}", _ref, _value),
    st.sampled_from(["true", "false", "! false", "[ -d /nonexistent ]"]),
)


def _end(block: str) -> str:
    return block + (" " if block.endswith("&") else "; ")


def _join(items: list[str]) -> str:
    """Commands in turn: ``;`` between them, none after one ended by ``&``."""
    return "".join(c + (" " if c.endswith("&") else "; ") for c in items[:-1]) + items[-1]


def _commands(depth: int) -> st.SearchStrategy[str]:
    simple = st.one_of(
        st.builds(lambda n, v: f"{n}={v}", _name, _value),
        st.builds(lambda n, v: f"export {n}={v}", _name, _value),
        st.builds(lambda ws: "vllm serve " + " ".join(ws), st.lists(_word, max_size=4)),
        st.builds(lambda ws: "vllm serve " + " ".join(ws) + " &", st.lists(_word, max_size=3)),
        st.builds(lambda n, v, w: f"{n}={v} vllm serve {w}", _name, _value, _word),
        st.builds(lambda ws: "set -- " + " ".join(ws), st.lists(_value, max_size=3)),
        st.just("shift"),
        st.builds(lambda n: f"unset {n}", _name),
        st.sampled_from(["cd /usr", "cd /nonexistent", "cd / || exit 0", "cd bin && cd .."]),
        st.sampled_from(["set -e", "set +e", "false", "f 16"]),
        # a command built in a variable, partly of run-time values, and eval'd
        st.builds(lambda ws: f'C="vllm serve {" ".join(ws)}"', st.lists(_piece, max_size=3)),
        st.builds(lambda w: f'C="$C {w}"', _piece),
        st.sampled_from(['eval "$C"', 'eval "$C &"', 'C="KV_B=$X $C"', "eval $C"]),
        # a function's output
        st.builds(lambda w, c: f"f() {{ {c} && echo {w}; echo -n $1; }}", _word, _cond),
        st.builds(lambda v: f'vllm serve "$(f {v})" $(f)', _value),
        st.builds(lambda n, v: f"{n}=$(f {v})", _name, _value),
    )
    if depth == 0:
        return simple
    inner = _commands(depth - 1)
    block = st.lists(inner, min_size=1, max_size=3).map(_join)
    return st.one_of(
        simple,
        st.builds(lambda c, a: f"if {c}; then {_end(a)}fi", _cond, block),
        st.builds(lambda c, a, b: f"if {c}; then {_end(a)}else {_end(b)}fi", _cond, block, block),
        st.builds(
            lambda r, p, a, b: f"case {r} in {p}) {a} ;; *) {b} ;; esac",
            _ref,
            st.sampled_from(["16", "a*", "''", "throughput|1", "?"]),
            block,
            block,
        ),
        st.builds(lambda a: f"( {_end(a)})", block),
        st.builds(lambda c, a: f"{c} && {{ {_end(a)}}}", _cond, block),
        st.builds(
            lambda ws, a: f"for KV_C in {' '.join(ws)}; do {_end(a)}done",
            st.lists(_value, max_size=2),
            block,
        ),
    )


_script = st.lists(_commands(2), min_size=1, max_size=5).map(_join)
_env = st.fixed_dictionaries(
    {}, optional={n: st.one_of(st.none(), st.sampled_from(_VALUES)) for n in _NAMES}
)


@settings(
    max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(script=_script, env=_env)
def test_generated_scripts_against_real_shells(
    script: str, env: dict[str, str | None], bindir: Path
) -> None:
    check(script, env, bindir, BOTH)


def test_a_tr_set_is_bounded() -> None:
    """A hostile script's ``tr`` ranges are not expanded past ``MAX_SET`` characters: the
    output is then only known at run time, computed in no time."""
    from kvconfig.load.shell.output import MAX_SET, translate

    assert translate(["-d", "a-z"], "abc1") == "1"
    assert translate(["-d", "\x00-\U0010ffff"], "a") is None
    assert translate(["-d", "a-" + chr(ord("a") + MAX_SET)], "a") is None
    assert translate(["-d", "a-z" * (MAX_SET // 26 + 1)], "a") is None


def test_scripts_the_container_holds_run_as_the_shells_run_them(
    bindir: Path, tmp_path: Path
) -> None:
    """Files a ConfigMap mounts (``held``): run by path, with or without a ``#!`` line, not
    run when not executable (status 126), and read by ``bash FILE`` and ``.``; each
    shell's own run of the same files, written where the script finds them."""
    folder = tmp_path / "scripts"
    folder.mkdir()
    files = {
        "plain.sh": ("X=p; vllm serve plain --x $X $1\n", 0o755),
        "bang.sh": ("#!/bin/sh\nvllm serve bang\n", 0o755),
        "other.sh": ("#!/usr/bin/env python3\nprint(1)\n", 0o755),
        "closed.sh": ("vllm serve closed\n", 0o644),
        "sourced.sh": ("Y=s\n", 0o644),
    }
    held = {}
    for name, (text, mode) in files.items():
        (folder / name).write_text(text)
        (folder / name).chmod(mode)
        held[str(folder / name)] = (text, bool(mode & 0o111))
    script = (
        f"cd {folder} && ./plain.sh a; ./bang.sh; ./closed.sh; ./other.sh\n"
        f"bash {folder}/closed.sh; . ./sourced.sh; vllm serve after $Y"
    )
    for shell in BOTH:
        dialect = "bash" if shell == "bash" else "sh"
        reading = read_script(script, {"HOME": _HOME}, dialect=dialect, held=held)
        said = [c.words for c in reading.commands if c.words[0] == "vllm" and not c.unknown]
        ran = [argv for argv, _ in real(shell, script, {}, bindir)]
        assert said == ran, f"{shell}: kvconfig says {said}, ran {ran}"


def test_a_polling_loop_left_on_a_run_time_answer_is_not_unrolled(bindir: Path) -> None:
    """A ``for (( ))`` round that a run-time answer may leave (``return``) makes how many
    rounds run a run-time choice: the loop's end is reached (``return 1`` after it), no
    part of the script is unseen, and bash's runs are among kvconfig's commands."""
    script = (
        'up() { for ((i=0; i<300; i++)); do if [ "$UP" = "$i" ]; then return 0; fi; done\n'
        "  return 1; }\nup && vllm serve m\nup || vllm serve n; vllm serve o"
    )
    reading = read_script(script, {"UP": None}, dialect="bash")
    assert not reading.blind
    named = {c.words: bool(c.when) for c in reading.commands}
    assert named == {("vllm", "serve", "m"): True, ("vllm", "serve", "n"): True,
                     ("vllm", "serve", "o"): False}  # fmt: skip
    for up in ("7", "400"):
        ran = {argv for argv, _ in real("bash", script, {"UP": up}, bindir)}
        assert ran <= set(named) and ("vllm", "serve", "o") in ran


def test_here_documents_and_a_functions_arguments_are_read_exactly(bindir: Path) -> None:
    """``$(cat <<EOF ...)`` is the here-document's text, and a function's ``"$@"`` keeps
    each known argument known when another is only known at run time: kvconfig names the
    very words bash runs, the run-time one aside."""
    script = (
        'P=7\nK=$(cat <<EOF\n{"a": $P}\nEOF\n)\nvllm serve m --kv "$K"\n'
        'run() { shift; "$@"; }\nrun log env KV_A=1 vllm serve n --x "$U" --port 1'
    )
    for shell in BOTH:
        reading = read_script(script, {"U": None}, dialect="bash" if shell == "bash" else "sh")
        assert not reading.blind
        first, second = [c for c in reading.commands if c.words[0] == "vllm"]
        assert first.words == ("vllm", "serve", "m", "--kv", '{"a": 7}') and not first.unknown
        assert second.unknown == ((4, "$U"),) and second.env.get("KV_A") == "1"
        ran = [argv for argv, _ in real(shell, script, {"U": "u"}, bindir)]
        assert ran == [first.words, ("vllm", "serve", "n", "--x", "u", "--port", "1")]


def test_a_virtual_environment_s_activate_leaves_the_rest_known(
    bindir: Path, tmp_path: Path
) -> None:
    """``. VENV/bin/activate`` of a real virtual environment, sourced by bash and dash: the
    known ``$KV_A`` stays known after it (kvconfig.load.shell.env_scripts), ``$VIRTUAL_ENV``
    and ``$PATH`` are only known at run time, and a file kvconfig knows nothing of still
    leaves every variable to run time."""
    import sys

    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    script = (
        f'KV_A=64; export KV_A; . "{venv}/bin/activate" && vllm serve m --block-size "$KV_A"\n'
        'KV_B="$VIRTUAL_ENV" vllm serve n "$PATH"'
    )
    check(script, {}, bindir, BOTH)
    first, second = read_script(script, {"HOME": _HOME}).commands
    assert first.words == ("vllm", "serve", "m", "--block-size", "64") and not first.when
    assert first.env["KV_A"] == "64"
    assert second.env["KV_B"] is None and second.unknown
    other = script.replace("bin/activate", "bin/setup.sh")
    first, _ = read_script(other, {"HOME": _HOME}).commands
    assert first.unknown or first.when  # any other file may set $KV_A


def test_getopt_prints_what_util_linux_getopt_prints() -> None:
    """``kvconfig.load.shell.gnu_getopt`` against the real ``getopt`` (util-linux) on
    random parameters: the same output where it computes one, and None wherever getopt
    fails."""
    import random

    from kvconfig.load.shell.gnu_getopt import getopt_output

    rng = random.Random(7)
    specs = [
        ["-o", "ht:m::v"], ["--options", "+ab:"], ["ab:c"], ["-o", "a", "-s", "bash"],
        ["-o", "h", "--longoptions", "engine-a:,engine-b:,model:,help,opt::", "-n", "x"],
        ["-l", "alpha,beta:", "-o", "x:"], ["-q", "-o", "a", "-l", "all, also:"],
    ]  # fmt: skip
    words = [
        "-h", "-t", "5", "-t5", "-m", "-mx", "-v", "--engine-a", "vllm", "--engine-a=sg",
        "--eng", "--model", "m/x", "--help", "--opt", "--opt=3", "pos", "it's", "--", "-a",
        "-b", "-ab", "-abz", "-c", "--alpha", "--beta=1", "--beta", "--al", "-x", "-xv",
        "a b", "", "--all", "--als", "--also", "-", "--help=1",
    ]  # fmt: skip
    computed = 0
    for spec in specs:
        for _ in range(40):
            params = [rng.choice(words) for _ in range(rng.randint(0, 5))]
            args = spec + params if spec == ["ab:c"] else [*spec, "--", *params]
            real = subprocess.run(["getopt", *args], capture_output=True, text=True, check=False)
            mine = getopt_output(args)
            if real.returncode != 0:
                assert mine is None, (args, real.stdout)
            elif mine is not None:
                assert mine == real.stdout.rstrip("\n"), args
                computed += 1
    assert computed > 60


def test_srun_runs_its_program_for_a_step_of_one_task() -> None:
    """Slurm's ``srun`` (not on this machine, so not run here) runs its program once per task
    of the step: read for ``-n 1``/``--ntasks=1`` (its options skipped as srun(1) takes them,
    a run-time value attached with ``=`` included); any other count is left to run time."""
    script = (
        'srun --export=ALL --nodelist="$NODE" --ntasks=1 --container-image img -J a '
        "env KV_A=1 vllm serve m &\n"
        "srun -N 2 vllm serve n &\nsrun -n 4 vllm serve o\nsrun -n1 -o log vllm serve p\n"
        'timeout --signal="$SIG" 5 vllm serve q; timeout -s $SIG 5 vllm serve r'
    )
    reading = read_script(script, {"HOME": _HOME, "NODE": None, "SIG": None}, dialect="bash")
    assert [c.words[2] for c in reading.commands] == ["m", "p", "q"]
    assert reading.commands[0].env["KV_A"] == "1"
    assert len(reading.blind) == 3  # srun -N 2, srun -n 4, timeout -s $SIG


def test_nsys_profile_runs_its_program() -> None:
    """NVIDIA Nsight Systems' ``nsys profile`` (not on this machine) runs the program after
    its switches, each of which takes a value (``--opt=value`` or ``-o value``)."""
    script = (
        'nsys profile --output="$OUT" --trace=cuda,nvtx -s none "$VLLM" serve m &\n'
        "nsys profile -o r -- vllm serve n\nnsys stats r.nsys-rep\nnsys profile -o"
    )
    reading = read_script(script, {"HOME": _HOME, "OUT": None, "VLLM": "/v/bin/vllm"})
    assert [c.words for c in reading.commands] == [
        ("/v/bin/vllm", "serve", "m"), ("vllm", "serve", "n"), ("nsys", "stats", "r.nsys-rep")
    ]  # fmt: skip


def test_opea_s_release_pins_set_only_the_pins() -> None:
    """OPEA GenAIComps' tests source ``.github/env/_vllm_versions.sh`` from the checkout's
    top: it exports the vLLM releases to build (kvconfig.load.shell.env_scripts), so the
    script's own ``$VLLM_MODEL`` stays known; ``$VLLM_VER`` is only known at run time."""
    script = (
        "set -e; export VLLM_MODEL=Qwen/Qwen3-8B\n"
        "source $(git rev-parse --show-toplevel)/.github/env/_vllm_versions.sh\n"
        'vllm serve "$VLLM_MODEL" --revision "$VLLM_VER"'
    )
    (command,) = read_script(script, {"HOME": _HOME}, dialect="bash").commands
    assert command.words[:3] == ("vllm", "serve", "Qwen/Qwen3-8B") and not command.when
    assert command.unknown == ((4, "$VLLM_VER"),)
    other = script.replace("_vllm_versions.sh", "_versions.sh")
    (command,) = read_script(other, {"HOME": _HOME}, dialect="bash").commands
    assert command.unknown[0][0] == 2 or command.when  # any other file may set $VLLM_MODEL


def test_set_u_stops_the_script_where_the_shells_stop() -> None:
    script = TABLE["set -u ends the script at an unset parameter"][0]
    got = [c.words for c in read_script(script, {}).commands]
    assert got == [("vllm", "serve", "a", "d"), ("vllm", "serve", "b"), ("vllm", "serve", "c")]


def test_getopts_is_read_when_the_arguments_are_known() -> None:
    """A launch script's getopts loop with no arguments ends at once (the defaults stand);
    over known arguments each option and its value are read, as bash and dash read them
    (the table cases check the same scripts against both)."""
    script = TABLE["getopts with no arguments keeps the defaults"][0]
    (cmd,) = read_script(script, {}, args=["launch.sh"]).commands
    assert cmd.words == ("vllm", "serve", "default") and not cmd.unknown and not cmd.when
    assert cmd.env["KV_B"] == "unset"
    loop = TABLE["getopts over set -- and its errors"][0]
    got = [c.words for c in read_script(loop, {}).commands]
    assert got[:5] == [
        ("vllm", "serve", "m"), ("vllm", "serve", "?"), ("vllm", "serve", "p"),
        ("vllm", "serve", "?"), ("vllm", "serve", "end", "-m", "m1", "-q", "-pv", "-x", "--",
                                "-m", "m2", "rest"),
    ]  # fmt: skip
    assert got[5] == ("vllm", "serve", "-m", "m2", "rest")


def test_an_arrays_run_time_elements_stay_one_word_each() -> None:
    """An element that is one field whatever its run-time parts hold keeps its place in
    ``"${A[@]}"``, so the words around it stay known; an unquoted one may be any number of
    fields, so the array's words after it are not placed."""
    script = (
        'A=(--model "m-$X" -tp 2 "$X" --port 8000); vllm serve "${A[@]}"\n'
        'B=(--model $X -tp 2); vllm serve "${B[@]}"\n'
    )
    first, second = read_script(script, {"X": None}, dialect="bash").commands
    assert first.words == (
        "vllm", "serve", "--model", "m-$X", "-tp", "2", "$X", "--port", "8000",
    )  # fmt: skip
    assert [i for i, _ in first.unknown] == [3, 6]
    assert [i for i, _ in second.unknown] == [2]
    assert len(second.words) == 3


@pytest.mark.parametrize("shell", ["bash", "dash"])
def test_the_lines_of_a_value_known_only_by_its_lines(bindir: Path, shell: str) -> None:
    """SkyPilot's ``SKYPILOT_NODE_IPS`` holds one run-time IP per line for each node:
    ``wc -l`` of it is the node count for any IPs, as the shell counts it; split or
    unquoted, it is left to run time."""
    from kvconfig.load.shell.words import hole

    script = (
        'N=$(echo "$IPS" | wc -l); M=`echo "x $IPS" | wc -l`; vllm serve m -tp "$N" "$M"\n'
        "vllm serve m $(echo $IPS | wc -l)"
    )
    dialect = "bash" if shell == "bash" else "sh"
    template = "\n".join([hole("an IP")] * 3)
    first, second = read_script(script, {"IPS": template}, dialect=dialect).commands
    assert first.words == ("vllm", "serve", "m", "-tp", "3", "3") and not first.unknown
    assert [i for i, _ in second.unknown] == [3]
    for ips in ("10.0.0.1\n10.0.0.2\n10.0.0.3", "a\nb c\nd"):
        ran = [argv for argv, _ in real(shell, script, {"IPS": ips}, bindir)]
        assert ran[0] == first.words and ran[1] == ("vllm", "serve", "m", "1")


def test_arithmetic_commands_are_evaluated(bindir: Path) -> None:
    """``(( ))`` sets its variables and its status (0 for a value other than 0), and the
    expressions of ``for (( ))`` are expanded first, exactly as bash does."""
    script = (
        "c=(a b c); n=1; (( n = $n + 1 )); i=0\n"
        "while (( i < ${#c[@]} )); do vllm serve w$i; (( i++ )); done\n"
        "(( i++ )) && vllm serve p$i; (( n - 2 )) || vllm serve q$n\n"
        "for ((k = ${#c[@]}; k > $n; k--)); do vllm serve k$k; done"
    )
    reading = read_script(script, {}, dialect="bash")
    said = [c.words for c in reading.commands]
    assert all(not c.unknown and not c.when for c in reading.commands)
    assert said == [argv for argv, _ in real("bash", script, {}, bindir)]
    assert [w[2] for w in said] == ["w0", "w1", "w2", "p4", "q2", "k3"]


def test_a_launch_script_s_shebang_options_are_in_force(bindir: Path, tmp_path: Path) -> None:
    """``#!/bin/bash -e``: the kernel starts the file with ``-e``, so the failing command
    ends it before the server; without the option the server runs. kvconfig reads the
    file as the kernel starts it."""
    for line, runs in (("#!/bin/bash -e", False), ("#!/bin/sh -eu", False), ("#!/bin/bash", True)):
        script = tmp_path / "start.sh"
        script.write_text(f"{line}\nfalse\nvllm serve m\n")
        script.chmod(0o755)
        proc = subprocess.run(
            [str(script)],
            env={"PATH": f"{bindir}:/usr/bin:/bin", "HOME": _HOME},
            capture_output=True,
            timeout=20,
            check=False,
        )
        ran = b"\001" in proc.stdout
        assert ran == runs, line
        reading = read_script(script.read_text(), {}, path=str(script), dialect="bash")
        said = [c.words for c in reading.commands if c.words[0] == "vllm"]
        assert said == ([("vllm", "serve", "m")] if runs else []), line
