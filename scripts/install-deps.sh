#!/usr/bin/env bash
# Installs what numalab needs to build on Debian/Ubuntu: the Debian packages
# named on the command line (via apt-get when root), and checks for a Rust
# toolchain new enough for the workspace. Prints what is missing otherwise.
set -euo pipefail

missing=()
for pkg in "$@"; do
  dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed" || missing+=("$pkg")
done

if [ ${#missing[@]} -gt 0 ]; then
  if [ "$(id -u)" -eq 0 ] && command -v apt-get >/dev/null; then
    echo "numalab: installing ${missing[*]}" >&2
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq
    apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
  else
    echo "numalab: missing Debian packages: ${missing[*]}" >&2
    echo "numalab: install them with: sudo apt-get install ${missing[*]}" >&2
    exit 1
  fi
fi

need_rust="1.89"
if ! command -v cargo >/dev/null; then
  echo "numalab: cargo not found; install Rust $need_rust or newer (e.g. with rustup) and run again" >&2
  exit 1
fi
have=$(rustc --version | awk '{print $2}')
if [ "$(printf '%s\n%s\n' "$need_rust" "$have" | sort -V | head -n1)" != "$need_rust" ]; then
  echo "numalab: rustc $have is too old; Rust $need_rust or newer is needed" >&2
  exit 1
fi
