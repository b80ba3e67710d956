#!/bin/sh
# kb-managed-hook: @HOOK@
# Installed by `kb hooks install`; `kb hooks uninstall` removes it. A hook that
# was here before was kept as @HOOK@.kb-chained: it runs first, with the same
# arguments and input, and uninstall puts it back.
# This hook only reads: it never changes tracked files, the index or refs.
KB_PYTHON='@KB_PYTHON@'
hook="$0"
input=""
if [ "@HOOK@" = "pre-push" ] || [ "@HOOK@" = "post-rewrite" ] || [ "@HOOK@" = "pre-receive" ]; then
    input=$(mktemp "${TMPDIR:-/tmp}/kb-@HOOK@.XXXXXX") || exit 1
    trap 'rm -f "$input"' EXIT
    cat > "$input"
fi

if [ -x "$hook.kb-chained" ]; then
    if [ -n "$input" ]; then
        "$hook.kb-chained" "$@" < "$input" || exit $?
    else
        "$hook.kb-chained" "$@" || exit $?
    fi
fi

if [ "@HOOK@" = "post-commit" ]; then
    # A cherry-pick, and a rebase pick where the rebase stops (an `edit`), commit
    # without the pre-commit hook: warn now, while the user can still amend. Other
    # rebase picks are checked once by post-rewrite when the rebase ends; a plain
    # commit went through pre-commit: skip starting kb.
    gd=$(git rev-parse --git-dir 2>/dev/null) || exit 0
    if [ -d "$gd/rebase-merge" ]; then
        current=$(sed -n '$p' "$gd/rebase-merge/done" 2>/dev/null)
        case "$current" in
            edit\ *|e\ *) ;;
            *) exit 0 ;;
        esac
    else
        [ -f "$gd/CHERRY_PICK_HEAD" ] || exit 0
        [ -d "$gd/rebase-apply" ] && exit 0
    fi
fi

run_kb() {
    if [ -x "$KB_PYTHON" ]; then
        if [ -n "$input" ]; then
            "$KB_PYTHON" -c "$KB_MAIN" "$@" < "$input"
        else
            "$KB_PYTHON" -c "$KB_MAIN" "$@"
        fi
        rc=$?
        [ "$rc" -ne 127 ] && return "$rc"
    fi
    if command -v kb >/dev/null 2>&1; then
        if [ -n "$input" ]; then kb "$@" < "$input"; else kb "$@"; fi
        return $?
    fi
    echo "kb: the @HOOK@ hook needs kb, which is not installed (not importable by $KB_PYTHON, no kb on PATH)." >&2
    echo "kb: install it with:  @KB_INSTALL@" >&2
    echo "kb: (or remove this hook with: kb hooks uninstall)" >&2
    return 1
}

KB_MAIN='import sys
try:
    from kb_cli.main import main
except ImportError:
    sys.exit(127)
sys.exit(main())'

run_kb @KB_ARGS@
