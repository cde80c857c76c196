#!/usr/bin/env bash
# Installs the server binaries that the backend tests start themselves
# (redis-server, PostgreSQL), the browser the page tests drive
# (Chromium) and promtool (in the prometheus package), which checks
# deploy/prometheus's alert rules, from Debian's packages,
# when they are missing and this machine can install them. It never fails the build: a test whose
# server cannot be had skips with a message, or fails when
# TENURE_REQUIRE_BACKENDS=1.
set -u

need=()
command -v redis-server >/dev/null 2>&1 || need+=(redis-server)
ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1 || need+=(postgresql)
command -v chromium >/dev/null 2>&1 || command -v chromium-browser >/dev/null 2>&1 ||
	command -v google-chrome >/dev/null 2>&1 || need+=(chromium)
command -v promtool >/dev/null 2>&1 || need+=(prometheus)

[ ${#need[@]} -eq 0 ] && exit 0

if [ "$(id -u)" != 0 ] || ! command -v apt-get >/dev/null 2>&1; then
	echo "backends: missing ${need[*]}; not root or no apt-get, so the tests that need them will skip" >&2
	exit 0
fi

echo "backends: installing ${need[*]}" >&2
export DEBIAN_FRONTEND=noninteractive
{ apt-get update -qq && apt-get install -y -qq --no-install-recommends "${need[@]}"; } >/tmp/tenure-apt.log 2>&1 ||
	echo "backends: apt-get install ${need[*]} failed (see /tmp/tenure-apt.log); the tests that need them will skip" >&2
exit 0
