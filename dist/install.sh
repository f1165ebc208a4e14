#!/usr/bin/env bash
# Installs the prebuilt `sqlgate` of this action's version from its repository's GitHub release,
# checked against the SHA-256 pinned beside this script (docs/action.md). The release workflow
# packs the binaries with this same script, so the archive it publishes and the one requested
# here are named in one place.
#
#   install.sh [install]             (the action) download, verify, install into
#                                    $SQLGATE_INSTALL_ROOT/bin; `installed=true|false` output
#   install.sh version               the action's version: the workspace version of Cargo.toml
#   install.sh target                this machine's target triple (no prebuilt binary: exit 1)
#   install.sh archive-name TARGET   the release archive of this version for TARGET
#   install.sh pack TARGET BINARY DIR  (the release workflow) writes the archive and its
#                                    .sha256 to DIR, prints its dist/checksums.txt line
#   install.sh source-hash           a hash of what a build reads (the fallback's cache key)
#
# Installing ends in one of three ways:
# - installed (exit 0, `installed=true`): the binary is in $SQLGATE_INSTALL_ROOT/bin, which is
#   added to $GITHUB_PATH;
# - not installed (exit 0, `installed=false`): no binary for this machine, no checksum pinned
#   for this version, the download failed, or the binary does not run here; the action then
#   builds from source;
# - refused (exit 1): the download does not match its pinned checksum. Never a fallback: an
#   altered download may be an attack.
# Usage errors and a malformed dist/checksums.txt exit 2. Nothing half-written is left behind.
set -euo pipefail

dist_dir=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
action_root=$(dirname "$dist_dir")
checksums="$dist_dir/checksums.txt"

usage_error() {
  echo "install.sh: $*" >&2
  exit 2
}

# The workspace version of the action's Cargo.toml, which the release tag `v<version>` names.
action_version() {
  local manifest="$action_root/Cargo.toml" version
  version=$(awk '
    /^\[/ { in_package = ($0 == "[workspace.package]"); next }
    in_package && /^version *= *"/ { sub(/^version *= *"/, ""); sub(/".*/, ""); print; exit }
  ' "$manifest")
  [ -n "$version" ] || usage_error "$manifest: no version in [workspace.package]"
  echo "$version"
}

# The Rust target triple of a prebuilt binary that runs on this machine; the release
# workflow's matrix builds exactly these.
host_target() {
  case "$(uname -s)/$(uname -m)" in
    Linux/x86_64 | Linux/amd64) echo x86_64-unknown-linux-gnu ;;
    Linux/aarch64 | Linux/arm64) echo aarch64-unknown-linux-gnu ;;
    Darwin/arm64 | Darwin/aarch64) echo aarch64-apple-darwin ;;
    Darwin/x86_64) echo x86_64-apple-darwin ;;
    *) return 1 ;;
  esac
}

# `sqlgate-v<version>-<target>`: the archive's name without `.tar.gz`, and its one folder.
archive_stem() {
  echo "sqlgate-v$(action_version)-$1"
}

# sha256sum, or macOS's shasum: the same output.
if command -v sha256sum >/dev/null 2>&1; then
  sha256_tool=(sha256sum)
elif command -v shasum >/dev/null 2>&1; then
  sha256_tool=(shasum -a 256)
else
  sha256_tool=()
fi

# sha256sum's lines for the files given (standard input for none).
sha256() {
  if [ ${#sha256_tool[@]} -eq 0 ]; then
    echo "install.sh: neither sha256sum nor shasum is installed" >&2
    return 1
  fi
  "${sha256_tool[@]}" "$@"
}

set_output() {
  if [ -n "${GITHUB_OUTPUT:-}" ]; then
    echo "$1=$2" >>"$GITHUB_OUTPUT"
  fi
}

not_installed() {
  echo "sqlgate: not installed: $*" >&2
  set_output installed false
  exit 0
}

# The SHA-256 pinned for this version and target, empty when none is; a malformed pin is an
# error naming its line.
pinned_checksum() {
  local version=$1 target=$2 pins
  [ -f "$checksums" ] || return 0
  pins=$(awk -v version="$version" -v target="$target" \
    '$1 == version && $2 == target { print NR " " $3 }' "$checksums")
  [ -n "$pins" ] || return 0
  local line checksum
  read -r line checksum <<<"$pins"
  if [ "$(awk 'END { print NR }' <<<"$pins")" != 1 ]; then
    usage_error "$checksums:$line: $version $target is pinned more than once"
  fi
  if ! [[ "$checksum" =~ ^[0-9a-f]{64}$ ]]; then
    usage_error "$checksums:$line: '$checksum' is not a SHA-256 (64 lowercase hex digits)"
  fi
  echo "$checksum"
}

install_binary() {
  local root=${SQLGATE_INSTALL_ROOT:-}
  [ -n "$root" ] || usage_error "set SQLGATE_INSTALL_ROOT: the binary goes to its bin/ folder"
  set_output root "$root"
  local version target
  version=$(action_version)
  target=$(host_target) || not_installed "no prebuilt binary for $(uname -s) $(uname -m)"
  local expected
  expected=$(pinned_checksum "$version" "$target")
  [ -n "$expected" ] ||
    not_installed "no checksum pinned for $version $target in $checksums (a release's pins are on its major tag, e.g. v${version%%.*})"

  local base=${SQLGATE_RELEASES_URL:-}
  if [ -z "$base" ]; then
    # A local action (`uses: ./`) has no GITHUB_ACTION_REPOSITORY: it is the workflow's own.
    local repository=${GITHUB_ACTION_REPOSITORY:-${GITHUB_REPOSITORY:-}}
    [ -n "$repository" ] || not_installed "neither GITHUB_ACTION_REPOSITORY nor GITHUB_REPOSITORY names a repository to download from"
    base="${GITHUB_SERVER_URL:-https://github.com}/$repository/releases/download"
  fi
  local stem archive url
  stem=$(archive_stem "$target")
  archive="$stem.tar.gz"
  url="$base/v$version/$archive"

  # Global, for the trap: removed however the script ends, with the partial copy below if it
  # was not moved into place.
  scratch=$(mktemp -d "${RUNNER_TEMP:-${TMPDIR:-/tmp}}/sqlgate-install.XXXXXX")
  partial=""
  trap 'rm -rf "$scratch"; if [ -n "$partial" ]; then rm -f "$partial"; fi' EXIT

  local started=$SECONDS curl_error
  if ! curl_error=$(curl --fail --silent --show-error --location --retry 3 \
    --connect-timeout 20 --max-time 600 --output "$scratch/$archive" "$url" 2>&1); then
    not_installed "could not download $url: $curl_error"
  fi
  local actual
  actual=$(sha256 "$scratch/$archive") || not_installed "cannot check the download's SHA-256"
  actual=${actual%% *}
  if [ "$actual" != "$expected" ]; then
    {
      echo "error: $url does not match the SHA-256 pinned in $checksums"
      echo "  pinned:     $expected"
      echo "  downloaded: $actual"
      echo "Refusing to install it (the download was altered, or the release was replaced after"
      echo "it was pinned); nothing was installed and the action does not fall back to a build."
    } >&2
    exit 1
  fi

  mkdir "$scratch/unpacked"
  tar -xzf "$scratch/$archive" -C "$scratch/unpacked"
  local binary="$scratch/unpacked/$stem/sqlgate"
  if [ ! -f "$binary" ]; then
    echo "error: $archive holds no $stem/sqlgate (its checksum is pinned, so the release is broken)" >&2
    exit 1
  fi
  # A binary that cannot run here (an older glibc, a musl system) means a build is needed.
  local reported
  reported=$("$binary" --version 2>&1) || not_installed "the prebuilt binary does not run here: $reported"
  if [ "$reported" != "sqlgate $version" ]; then
    echo "error: $archive reports '$reported', not 'sqlgate $version'" >&2
    exit 1
  fi

  mkdir -p "$root/bin"
  partial="$root/bin/.sqlgate.partial.$$"
  cp "$binary" "$partial"
  chmod 755 "$partial"
  mv -f "$partial" "$root/bin/sqlgate"
  partial=""
  if [ -n "${GITHUB_PATH:-}" ]; then
    echo "$root/bin" >>"$GITHUB_PATH"
  fi
  set_output installed true
  echo "sqlgate: installed $version ($target) from $url in $((SECONDS - started)) s"
}

# Writes `<stem>.tar.gz` (one folder, `<stem>/sqlgate`) and `<stem>.tar.gz.sha256` to the
# output folder; prints the line the release workflow pins in dist/checksums.txt.
pack() {
  local target=$1 binary=$2 out=$3
  [ -f "$binary" ] || usage_error "pack: no binary at $binary"
  local stem staging
  stem=$(archive_stem "$target")
  staging=$(mktemp -d)
  mkdir "$staging/$stem"
  cp "$binary" "$staging/$stem/sqlgate"
  chmod 755 "$staging/$stem/sqlgate"
  mkdir -p "$out"
  # COPYFILE_DISABLE: macOS's tar would add AppleDouble `._` files.
  COPYFILE_DISABLE=1 tar -czf "$out/$stem.tar.gz" -C "$staging" "$stem"
  rm -rf "$staging"
  (cd "$out" && sha256 "$stem.tar.gz" >"$stem.tar.gz.sha256")
  local checksum
  checksum=$(cut -d' ' -f1 "$out/$stem.tar.gz.sha256")
  echo "$(action_version) $target $checksum"
}

# Every file a build of the binary reads: the manifests, the lock file and the crates'
# sources (not tests/, benches/ or docs/), names and contents.
source_hash() {
  cd "$action_root"
  { printf '%s\n' Cargo.toml Cargo.lock && find src crates -type f; } |
    LC_ALL=C sort | tr '\n' '\0' | xargs -0 "${sha256_tool[@]}" | sha256 | cut -d' ' -f1
}

command=${1:-install}
case "$command" in
  install) install_binary ;;
  version) action_version ;;
  target) host_target || {
    echo "install.sh: no prebuilt binary for $(uname -s) $(uname -m)" >&2
    exit 1
  } ;;
  archive-name)
    [ $# -eq 2 ] || usage_error "usage: install.sh archive-name TARGET"
    echo "$(archive_stem "$2").tar.gz"
    ;;
  pack)
    [ $# -eq 4 ] || usage_error "usage: install.sh pack TARGET BINARY OUT_DIR"
    pack "$2" "$3" "$4"
    ;;
  source-hash) source_hash ;;
  *) usage_error "unknown command '$command' (install, version, target, archive-name, pack, source-hash)" ;;
esac
