# Shared by scripts/wine-lane and scripts/release-check (sourced, not run): the
# HCN emulator DLLs staged beside .exe files, and a private headless prefix. The tools
# themselves (wine64, mingw-w64, the Windows target) are scripts/setup's.
#
#   wine_stage_dlls DIR        builds computenetwork.dll, vmcompute.dll (the HCN emulator) and the
#                              test-only bcryptprimitives.dll shim (Wine 8 lacks ProcessPrng, which
#                              every Rust .exe imports) and copies them into DIR
#   wine_system_dlls DIR       copies the emulator DLLs staged in DIR into the prefix's System32,
#                              where a Windows host has computenetwork.dll and vmcompute.dll
#                              (call after wine_start)
#   wine_start PREFIX          exports WINE/WINEPREFIX/..., initialises PREFIX once and starts
#                              one persistent wineserver, ended when the calling script exits;
#                              $WINE starts every Windows process with ASLR off (see below)

WINE_TARGET=x86_64-pc-windows-gnu

# Debian's wine64 package ships the loader outside PATH; the wine package adds /usr/bin/wine64.
wine_find() {
  command -v wine64 && return
  if [ -x /usr/lib/wine/wine64 ]; then echo /usr/lib/wine/wine64; fi
}

wine_stage_dlls() {
  local dir=$1
  cargo build --locked --target "$WINE_TARGET" -p hcn-emulator-computenetwork -p hcn-emulator-vmcompute
  mkdir -p "$dir"
  x86_64-w64-mingw32-gcc -O2 -Wall -Wextra -Werror -shared \
    -o "$dir/bcryptprimitives.dll" wine/prng-shim/bcryptprimitives.c -ladvapi32
  cp target/"$WINE_TARGET"/debug/computenetwork.dll target/"$WINE_TARGET"/debug/vmcompute.dll "$dir"/
}

# Go programs (kube-proxy, through hcsshim) load computenetwork.dll and vmcompute.dll as system
# DLLs, from System32 only (LOAD_LIBRARY_SEARCH_SYSTEM32), never from beside the .exe as Rust's
# raw-dylib imports do; the emulator DLLs go there too, with the shim they import.
wine_system_dlls() {
  local dir=$1
  cp "$dir/computenetwork.dll" "$dir/vmcompute.dll" "$dir/bcryptprimitives.dll" \
    "$WINEPREFIX/drive_c/windows/system32/"
}

# A private, headless prefix: no display, no Mono/Gecko installers, Wine's own logging off,
# and our DLLs (found first in the application directory) preferred over Wine's builtins.
wine_start() {
  local loader
  loader=$(wine_find)
  WINESERVER=$(command -v wineserver || echo "$(dirname "$loader")/wineserver")
  WINEPREFIX=$1
  # Every Windows process starts with address-space layout randomisation off. With it on,
  # Debian's wine64 8.0, which ships no wine64-preloader to reserve its fixed addresses before
  # the kernel places anything there, now and then cannot map its shared user data
  # (`WINEDEBUG=err+all`: "failed to map the shared user data: c0000018") and exits 1 before
  # any code of the .exe runs: about once in 200 starts on a loaded machine, never with ASLR
  # off. $WINE is a two-line launcher, so Rust callers (`conformance::launcher::Wine` reads
  # $WINE) and these scripts start Wine the same way.
  mkdir -p "$(dirname "$WINEPREFIX")"
  WINE=$WINEPREFIX.wine
  printf '#!/bin/sh\nexec setarch "$(uname -m)" --addr-no-randomize %s "$@"\n' "$loader" >"$WINE"
  chmod +x "$WINE"
  export WINE WINESERVER WINEPREFIX WINEDEBUG=-all
  export WINEDLLOVERRIDES="mscoree,mshtml=;bcryptprimitives,computenetwork,vmcompute=n"
  unset DISPLAY WAYLAND_DISPLAY
  # A server left over from an interrupted run of this (private) prefix is ours to end.
  "$WINESERVER" --kill 2>/dev/null || true
  if [ ! -f "$WINEPREFIX/system.reg" ]; then
    echo "wine: initialising the prefix $WINEPREFIX" >&2
    timeout 300 "$WINE" wineboot --init >/dev/null 2>&1
    # The registry is written when wineboot's server exits.
    timeout 60 "$WINESERVER" --wait
  fi
  # One persistent wineserver for the whole run (each process then starts in ~0.1 s).
  "$WINESERVER" --persistent
  trap '"$WINESERVER" --kill || true' EXIT
}
