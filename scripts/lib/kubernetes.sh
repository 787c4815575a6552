# Shared by scripts/node-lane (sourced, not run): the real Kubernetes node components the lane
# runs beside cni-win, built from Debian bookworm's `kubernetes` source package (the only
# Kubernetes source with its vendor/ tree that this project's registries carry; the Go module
# proxy is not reachable) with Debian's Go toolchain (installed, with etcd and the build's
# helpers, by scripts/setup).
#
#   k8s_binaries DIR   prints the directory holding kube-apiserver, kubectl (Linux) and
#                      kube-proxy.exe (Windows), building them once into a cache under DIR keyed
#                      by the source package's version and this recipe's, so a fresh clone on
#                      the same machine finds them; rebuilt only when missing or either changes
#
# Three facts make Kubernetes 1.20 build with bookworm's Go 1.19:
# - 1.20 vendors github.com/modern-go/reflect2 1.0.1, which crashes at run time on Go >= 1.18;
#   Debian's golang-github-modern-go-reflect2-dev carries 1.0.2, whose files replace it;
# - the tarball has no generated OpenAPI file for kube-apiserver: Kubernetes' own `make`
#   generates it (hack/make-rules in GOPATH mode, as debian/rules builds), so `make` is used;
# - Debian's patches (debian/patches/series) are applied as `dpkg-source -x` would.

K8S_RECIPE=1

# apt with a private list of bookworm's source index, so the machine's own sources stay as
# they are (they carry no deb-src line).
k8s_apt_options() {
  local state=$1
  echo "-o Dir::Etc::SourceList=$state/sources.list -o Dir::Etc::SourceParts=/dev/null -o Dir::State::Lists=$state/lists -o Dir::Cache=$state/cache"
}

k8s_binaries() {
  local cache_root=$1
  local state=$cache_root/apt
  mkdir -p "$state/lists/partial" "$state/cache/archives/partial"
  echo "deb-src http://deb.debian.org/debian bookworm main" >"$state/sources.list"
  local apt_options
  read -ra apt_options <<<"$(k8s_apt_options "$state")"
  apt-get "${apt_options[@]}" update -q >/dev/null
  local version
  version=$(apt-cache "${apt_options[@]}" showsrc kubernetes | awk '/^Version:/ { print $2; exit }')
  [ -n "$version" ] || { echo "kubernetes: bookworm's source index has no kubernetes package" >&2; return 1; }
  local out=$cache_root/kubernetes-$version-recipe$K8S_RECIPE
  if [ -x "$out/kube-apiserver" ] && [ -x "$out/kubectl" ] && [ -f "$out/kube-proxy.exe" ]; then
    echo "$out"
    return
  fi
  echo "kubernetes: building kube-apiserver, kubectl and kube-proxy.exe $version into $out (once per version)" >&2
  local work=$cache_root/build
  rm -rf "$work" && mkdir -p "$work"
  (cd "$work" && apt-get "${apt_options[@]}" source --download-only "kubernetes=$version" >&2)
  tar -C "$work" -xzf "$work"/kubernetes_*.orig.tar.gz
  tar -C "$work" -xJf "$work"/kubernetes_*.debian.tar.xz
  local src
  src=$(find "$work" -maxdepth 1 -type d -name 'kubernetes-*' | head -1)
  local patch_name
  while read -r patch_name; do
    case $patch_name in ''|'#'*) continue ;; esac
    patch -d "$src" -p1 --quiet <"$work/debian/patches/$patch_name"
  done <"$work/debian/patches/series"
  rm -rf "$src/vendor/github.com/modern-go/reflect2"
  mkdir -p "$src/vendor/github.com/modern-go/reflect2"
  cp /usr/share/gocode/src/github.com/modern-go/reflect2/*.go \
    /usr/share/gocode/src/github.com/modern-go/reflect2/*.s "$src/vendor/github.com/modern-go/reflect2/"
  (
    cd "$src"
    export CGO_ENABLED=0 HOME=$work/home
    make WHAT="cmd/kube-apiserver cmd/kubectl" >&2
    make WHAT=cmd/kube-proxy KUBE_BUILD_PLATFORMS=windows/amd64 >&2
  )
  mkdir -p "$out.partial"
  cp "$src/_output/local/bin/linux/amd64/kube-apiserver" "$src/_output/local/bin/linux/amd64/kubectl" \
    "$src/_output/local/bin/windows/amd64/kube-proxy.exe" "$out.partial/"
  rm -rf "$out" && mv "$out.partial" "$out"
  rm -rf "$work"
  echo "$out"
}
