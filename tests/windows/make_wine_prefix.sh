#!/usr/bin/env sh
# Makes the wine tests' prefix from nothing: make_wine_prefix.sh PREFIX WINE WINESERVER.
# A new prefix each run: wine sets a prefix up in the background of the first program it runs,
# and one cut short under a loaded machine lacks services for good (seen: no nsiproxy, so every
# IP helper call failed with "file not found" and wine.tcp_listeners with it). wineboot --init
# and `wineserver -w` wait until the set-up is complete and saved.
set -eu
prefix="$1" wine="$2" wineserver="$3"
export WINEPREFIX="$prefix"
rm -rf "$prefix"
"$wine" wineboot --init
"$wineserver" -w
# Wine's null graphics driver: the tests make a hidden window (the stop signal's logoff and
# shutdown listener), and with no display wine's default driver creates no window at all.
"$wine" reg add 'HKCU\Software\Wine\Drivers' /v Graphics /d null /f
"$wineserver" -w
# Every service the tests rely on is registered.
grep -q nsiproxy "$prefix/system.reg" || {
    echo "the wine prefix at $prefix is incomplete (no nsiproxy service)"
    exit 1
}
echo "wine prefix ready at $prefix"
