# Shell helpers shared by the server scripts in scripts/servers/. Each of them
# sources this file, so it works both when scripts/test.sh sources it and when
# it is run by hand.

# free_port prints a TCP port nothing listens on now.
free_port() {
  local port used
  used=$(ss -Htln 2>/dev/null | awk '{print $4}' | sed 's/.*://')
  while :; do
    port=$((20000 + RANDOM % 40000))
    grep -qx "$port" <<<"$used" || break
  done
  echo "$port"
}
