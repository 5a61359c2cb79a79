#!/usr/bin/env bash
# Fails when a tracked file reaches outside the repository: the reference shelf
# folder that sits beside the development checkout, or an absolute path of
# a development machine. A user's clone has neither, so a test or a doc that names
# them works only for us.
set -euo pipefail
cd "$(dirname "$0")/.."
bad=0
# The patterns are built from pieces so this script does not match itself.
shelf='\.\./'"shared"
dev='/'"work/|/"'root/|/home/[a-z]'
if git grep -n -E "$shelf" -- . ; then
  echo "check-standalone: the files above refer to the shelf beside the checkout; copy what they need into the repository" >&2
  bad=1
fi
if git grep -n -E "$dev" -- . ; then
  echo "check-standalone: the files above name an absolute path of a development machine" >&2
  bad=1
fi
# Every relative link in the Markdown files resolves inside the repository.
while IFS= read -r md; do
  dir=$(dirname "$md")
  while IFS= read -r link; do
    target=${link%%#*}
    [ -z "$target" ] && continue
    case "$target" in http:*|https:*|mailto:*) continue ;; esac
    if [ ! -e "$dir/$target" ]; then
      echo "check-standalone: $md links to '$link', which does not exist" >&2
      bad=1
    fi
  done < <(grep -oE '\]\([^)]+\)' "$md" | sed -E 's/^\]\((.*)\)$/\1/')
done < <(git ls-files '*.md')
exit $bad
