# shellcheck shell=bash
# install_system_packages PKG...: install the Debian packages that are missing, when this
# machine has apt and we are root; otherwise say which are missing and go on. Everything is
# printed on stderr (scripts/serve's stdout is the MCP channel).
install_system_packages() {
  command -v dpkg >/dev/null 2>&1 || return 0
  local missing=() pkg
  for pkg in "$@"; do
    dpkg -s "$pkg" >/dev/null 2>&1 || missing+=("$pkg")
  done
  [ "${#missing[@]}" -gt 0 ] || return 0
  if command -v apt-get >/dev/null 2>&1 && [ "$(id -u)" = 0 ]; then
    echo "== installing system packages: ${missing[*]}" >&2
    apt-get update -qq >/dev/null
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >/dev/null
  else
    echo "note: missing system packages (install them for every feature): ${missing[*]}" >&2
  fi
}
