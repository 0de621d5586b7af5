# Shell helpers shared by the server scripts in scripts/servers/. Each of them
# sources this file, so it works both when scripts/test.sh sources it and when
# it is run by hand.

# free_port prints a TCP port nothing listens on now.
# Ports it has handed out are remembered in a file per shell ($$ is the
# shell's even in the $(...) subshells it is called from), so two servers of
# one run never get the same port before either listens.
free_port() {
  local port used given="${TMPDIR:-/tmp}/tend-ports.$$"
  used=$(ss -Htan 2>/dev/null | awk '{print $4}' | sed 's/.*://'; cat "$given" 2>/dev/null)
  while :; do
    port=$((20000 + RANDOM % 40000))
    grep -qx "$port" <<<"$used" || break
  done
  echo "$port" >>"$given"
  echo "$port"
}
