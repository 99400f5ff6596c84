#!/bin/sh
# install.sh: installs avenor and its plugins from a release archive, after
# checking the archive against the release's SHA256SUMS.
#
#   install.sh --archive avenor_0.1.0_linux_amd64.tar.gz [--sums SHA256SUMS] [--prefix DIR]
#   install.sh --version 0.1.0 [--base-url URL] [--prefix DIR]   (downloads both first)
#
# The binaries go to PREFIX/bin (default /usr/local/bin), side by side: avenor
# finds its plugins next to itself. Nothing is extracted, let alone
# installed, unless the archive's SHA-256 is the one SHA256SUMS lists for its
# file name. The archive is read once, into a private copy that is hashed and
# extracted, so a file swapped after the check is never installed; an archive
# holding links, absolute paths or .. is refused. POSIX sh; needs sha256sum,
# shasum or openssl, gzip and tar, and curl or wget to download.
set -eu

prog=install.sh
archive=
sums=
prefix=${PREFIX:-/usr/local}
version=
base_url=${AVENOR_RELEASE_URL:-https://github.com/avenor-go/avenor/releases/download}

die() {
	printf '%s: %s\n' "$prog" "$*" >&2
	exit 1
}

usage() {
	cat >&2 <<EOF
usage: install.sh --archive avenor_<version>_<os>_<arch>.tar.gz [--sums SHA256SUMS] [--prefix DIR]
       install.sh --version <version> [--base-url URL] [--prefix DIR]
EOF
	exit 2
}

while [ $# -gt 0 ]; do
	case $1 in
	--archive) [ $# -ge 2 ] || usage; archive=$2; shift 2 ;;
	--sums) [ $# -ge 2 ] || usage; sums=$2; shift 2 ;;
	--prefix) [ $# -ge 2 ] || usage; prefix=$2; shift 2 ;;
	--version) [ $# -ge 2 ] || usage; version=${2#v}; shift 2 ;;
	--base-url) [ $# -ge 2 ] || usage; base_url=$2; shift 2 ;;
	--archive=*) archive=${1#*=}; shift ;;
	--sums=*) sums=${1#*=}; shift ;;
	--prefix=*) prefix=${1#*=}; shift ;;
	--version=*) version=${1#*=}; version=${version#v}; shift ;;
	--base-url=*) base_url=${1#*=}; shift ;;
	-h | --help) usage ;;
	*) printf '%s: unknown argument %s\n' "$prog" "$1" >&2; usage ;;
	esac
done
[ -n "$prefix" ] || die "--prefix is empty; give the directory whose bin/ should hold avenor"

tmp=$(mktemp -d 2>/dev/null || mktemp -d -t avenor-install)
trap 'rm -rf "$tmp"' EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# sha256 FILE prints FILE's SHA-256 in hex.
sha256() {
	if command -v sha256sum >/dev/null 2>&1; then
		sha256sum "$1" | cut -d' ' -f1
	elif command -v shasum >/dev/null 2>&1; then
		shasum -a 256 "$1" | cut -d' ' -f1
	elif command -v openssl >/dev/null 2>&1; then
		openssl dgst -sha256 "$1" | sed 's/^.*= *//'
	else
		die "no sha256sum, shasum or openssl to check the archive with; install one of them"
	fi
}

# fetch URL FILE downloads URL to FILE.
fetch() {
	if command -v curl >/dev/null 2>&1; then
		curl -fsSL -o "$2" "$1" || die "downloading $1 failed; check the version and your network, or download it yourself and pass --archive and --sums"
	elif command -v wget >/dev/null 2>&1; then
		wget -q -O "$2" "$1" || die "downloading $1 failed; check the version and your network, or download it yourself and pass --archive and --sums"
	else
		die "neither curl nor wget is installed; download the archive and SHA256SUMS yourself and pass --archive and --sums"
	fi
}

if [ -z "$archive" ]; then
	[ -n "$version" ] || die "give --archive FILE (a downloaded release archive) or --version VERSION (to download one)"
	case $(uname -s) in
	Linux) os=linux ;;
	Darwin) os=darwin ;;
	*) die "no release archive for $(uname -s); build from source (see README.md)" ;;
	esac
	case $(uname -m) in
	x86_64 | amd64) arch=amd64 ;;
	aarch64 | arm64) arch=arm64 ;;
	*) die "no release archive for $(uname -m); build from source (see README.md)" ;;
	esac
	name=avenor_${version}_${os}_${arch}.tar.gz
	fetch "$base_url/v$version/$name" "$tmp/$name"
	[ -n "$sums" ] || { fetch "$base_url/v$version/SHA256SUMS" "$tmp/SHA256SUMS"; sums=$tmp/SHA256SUMS; }
	archive=$tmp/$name
fi

[ -f "$archive" ] || die "archive $archive does not exist"
name=$(basename "$archive")
if [ -z "$sums" ]; then
	sums=$(dirname "$archive")/SHA256SUMS
	[ -f "$sums" ] || die "no SHA256SUMS next to $archive; download the release's SHA256SUMS and pass it with --sums"
fi
[ -f "$sums" ] || die "checksum file $sums does not exist"

# The line for this file name: "<hex>  <name>" (or "<hex> *<name>"). A
# SHA256SUMS saved with CRLF line ends (a Windows download) reads the same.
want=$(awk -v f="$name" '{ sub(/\r$/, "") } $2 == f || $2 == "*" f { print $1; exit }' "$sums")
[ -n "$want" ] || die "$sums lists no checksum for $name; is it the SHA256SUMS of the same release?"

# One read of the archive: into a private copy (the temporary directory is
# ours alone), which is hashed and then extracted. Reading $archive twice
# would let whoever can write its directory swap it between the check and
# the extraction.
copy=$tmp/archive.tar.gz
cp "$archive" "$copy" 2>/dev/null || die "cannot read $archive"
got=$(sha256 "$copy")
if [ "$got" != "$want" ]; then
	die "checksum mismatch for $archive: $sums says $want, the file is $got; the archive is damaged or was tampered with, nothing was installed; download it again"
fi

# A release archive holds directories and regular files only, under relative
# names. A symbolic or hard link would install whatever it points at (a
# private file, as an executable); an absolute or .. name would land outside
# the extraction directory with some tars.
gzip -dc "$copy" >"$tmp/archive.tar" || die "cannot extract $archive: it is not a gzip file"
tar -tf "$tmp/archive.tar" >"$tmp/names" || die "cannot extract $archive: tar cannot list it"
tar -tvf "$tmp/archive.tar" >"$tmp/listing" || die "cannot extract $archive: tar cannot list it"
while IFS= read -r member; do
	case $member in
	/* | .. | ../* | */../* | */..) die "$archive holds a member outside its directory ($member); a release archive never does, nothing was installed" ;;
	esac
done <"$tmp/names"
while IFS= read -r line; do
	case $line in
	*" link to "* | *" -> "*) die "$archive holds a link ($line); a release archive never does, nothing was installed" ;;
	-* | d*) ;;
	*) die "$archive holds a member that is not a file or a directory ($line); a release archive never does, nothing was installed" ;;
	esac
done <"$tmp/listing"
mkdir "$tmp/x"
(cd "$tmp/x" && tar -xf "$tmp/archive.tar") || die "cannot extract $archive"
# And what tar made of it: nothing but files and directories.
odd=$(find "$tmp/x" ! -type f ! -type d)
[ -z "$odd" ] || die "$archive holds a member that is not a file or a directory ($odd); nothing was installed"

# The archive holds one directory (avenor_<version>_<os>_<arch>/) or the files
# themselves.
src=$tmp/x
if [ ! -f "$src/avenor" ]; then
	for d in "$tmp"/x/*/; do
		[ -f "${d}avenor" ] && src=${d%/}
	done
fi
[ -f "$src/avenor" ] || die "$archive holds no avenor binary; is it an avenor release archive?"

mkdir -p "$prefix/bin" 2>/dev/null || die "cannot create $prefix/bin; run as a user who may write there, or pass --prefix \$HOME/.local"
[ -w "$prefix/bin" ] || die "cannot write to $prefix/bin; run as a user who may write there, or pass --prefix \$HOME/.local"
n=0
for f in "$src"/avenor "$src"/avenor-plugin-*; do
	[ -f "$f" ] || continue
	b=$(basename "$f")
	# A new name then a rename: a running avenor keeps its old binary.
	cp "$f" "$prefix/bin/.$b.new" && chmod 0755 "$prefix/bin/.$b.new" &&
		mv -f "$prefix/bin/.$b.new" "$prefix/bin/$b" || die "cannot install $b into $prefix/bin"
	n=$((n + 1))
done
printf 'installed avenor and %d plugins from %s into %s/bin\n' $((n - 1)) "$name" "$prefix"
case ":${PATH:-}:" in
*":$prefix/bin:"*) ;;
*) printf 'add %s/bin to PATH to run avenor\n' "$prefix" ;;
esac
