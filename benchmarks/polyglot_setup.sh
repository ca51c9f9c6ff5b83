#!/usr/bin/env bash
# Installs what the polyglot benchmark's test runs need, once, so the runs themselves are
# offline: the Debian toolchains (as root) and, into DIR, jest with babel and a JUnit
# reporter for the JavaScript exercises (pinned by benchmarks/polyglot/javascript's lock file).
#
#   benchmarks/polyglot_setup.sh [--dir DIR] [LANGUAGE ...]
#
# LANGUAGEs: any of go rust cpp java javascript (default: all; Python needs nothing).
# DIR defaults to $CODELOOP_POLYGLOT_TOOLCHAINS, else $CODELOOP_CACHE_DIR/polyglot-toolchains,
# else ~/.cache/codeloop/polyglot-toolchains (where benchmarks/polyglot_oracle.py looks).
# Idempotent: installed packages and an unchanged lock file are left alone.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)/polyglot"
cache="${CODELOOP_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/codeloop}"
dir="${CODELOOP_POLYGLOT_TOOLCHAINS:-$cache/polyglot-toolchains}"
if [ "${1:-}" = --dir ]; then
  dir="$2"
  shift 2
fi
languages=("$@")
[ "${#languages[@]}" -gt 0 ] || languages=(go rust cpp java javascript)

# Go, Rust, C++ and Java from Debian. Java's tests compile with javac and run with JUnit's
# console launcher (Debian's junit5), with Debian's AssertJ and the Android rewrite of
# org.json (rest-api); gradle is not used (Debian's 4.4 is too old for the exercises).
debs=()
for language in "${languages[@]}"; do
  case "$language" in
    go) debs+=(golang-go) ;;
    rust) debs+=(cargo) ;;
    cpp) debs+=(cmake g++ make libboost-date-time-dev) ;;  # gigasecond uses Boost.Date_Time
    java) debs+=(default-jdk-headless junit5 libassertj-core-java libandroid-json-java) ;;
    javascript) ;;
    *) echo "polyglot_setup: unknown language $language (go rust cpp java javascript)" >&2
       exit 2 ;;
  esac
done
missing=()
for deb in ${debs[@]+"${debs[@]}"}; do
  dpkg-query -W -f='${Status}' "$deb" 2>/dev/null | grep -q "install ok installed" || missing+=("$deb")
done
if [ "${#missing[@]}" -gt 0 ]; then
  if [ "$(id -u)" != 0 ]; then
    echo "polyglot_setup: as root, install: apt-get install -y ${missing[*]}" >&2
    exit 1
  fi
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >/dev/null
fi

case " ${languages[*]} " in
  *" javascript "*) ;;
  *) echo "polyglot toolchains ready"; exit 0 ;;
esac

# JavaScript: Node.js from the system (NodeSource's or Debian's nodejs and npm).
if ! command -v node >/dev/null 2>&1 || ! command -v npm >/dev/null 2>&1; then
  echo "polyglot_setup: install Node.js and npm first (e.g. apt-get install -y nodejs npm)" >&2
  exit 1
fi
js="$dir/javascript"
mkdir -p "$js"
if ! cmp -s "$here/javascript/package-lock.json" "$js/package-lock.json" \
    || [ ! -f "$js/node_modules/.package-lock.json" ]; then
  cp "$here/javascript/package.json" "$here/javascript/package-lock.json" "$js/"
  (cd "$js" && npm ci --ignore-scripts --no-audit --no-fund --loglevel=error >/dev/null)
fi
cp "$here/javascript/unskip.js" "$js/unskip.js"
# Commands in the sandbox run as another user: everything must be readable by all.
chmod -R a+rX "$js"
echo "polyglot toolchains ready in $dir"
