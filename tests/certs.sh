# Sourced by the TLS test servers (redis-tls.sh, postgres-server.sh): a throwaway CA and
# certificates it signs, made by openssl in the current directory (prime256v1 keys, 2 days).

# ca NAME: NAME.key and a self-signed CA certificate NAME.crt.
ca() {
  openssl ecparam -name prime256v1 -genkey -noout -out "$1.key"
  openssl req -x509 -new -key "$1.key" -out "$1.crt" -days 2 -subj "/CN=throttlekit test $1" \
    -addext basicConstraints=critical,CA:TRUE -addext keyUsage=critical,keyCertSign,cRLSign
}

# leaf NAME EXTENSIONS: NAME.key (PKCS#8) and NAME.crt signed by ca.crt, with EXTENSIONS
# (printf %b text, one `key=value` a line) as its X.509v3 extensions.
leaf() {
  openssl ecparam -name prime256v1 -genkey -noout | openssl pkcs8 -topk8 -nocrypt -out "$1.key"
  openssl req -new -key "$1.key" -out "$1.csr" -subj "/CN=$1"
  printf '%b' "$2" >"$1.ext"
  openssl x509 -req -in "$1.csr" -CA ca.crt -CAkey ca.key -CAcreateserial -out "$1.crt" -days 2 -extfile "$1.ext"
}
