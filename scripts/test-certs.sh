#!/usr/bin/env bash
# Certificates for trying STOMP and AMQP over TLS with a private broker (development and tests only).
#
#   bash scripts/test-certs.sh DIR [SAN]
#
# SAN: the broker certificate's subjectAltName (default IP:127.0.0.1,DNS:localhost).
# Makes in DIR (with openssl; keytool for the Java trust store), all valid for 2 days:
#   ca.pem ca.key          a test CA (what msgcap trusts: jms.ssl.ca=DIR/ca.pem)
#   broker.p12             the broker's key and certificate (signed by the CA), PKCS#12 (ActiveMQ)
#   broker.pem broker.key  the same certificate and its unencrypted key, PEM (RabbitMQ)
#   broker-expired.p12     the same kind of certificate, expired in January 2020
#   broker-expired.pem .key  that one as PEM
#   truststore.p12         the CA, as the broker's trust store for client certificates
#   client.pem client.key  a client certificate and its unencrypted key (jms.ssl.cert/.key)
#   other-ca.pem           an unrelated CA (trusting it instead of ca.pem must fail)
#   other-client.pem .key  a client certificate issued by that unrelated CA
# The PKCS#12 stores are protected by MSGCAP_TLS_STOREPASS (default: changeit).
set -euo pipefail
source "$(dirname "$0")/env.sh"
print_help_if_asked "$@"

if ! command -v openssl >/dev/null || ! command -v keytool >/dev/null; then
    command -v openssl >/dev/null || _apt_install openssl
    command -v keytool >/dev/null || ensure_activemq_package  # brings a JRE with keytool
fi

DIR="${1:?usage: $0 DIR [SAN]}"
SAN="${2:-IP:127.0.0.1,DNS:localhost}"
PASS="${MSGCAP_TLS_STOREPASS:-changeit}"
mkdir -p "$DIR"
cd "$DIR"
umask 077

_key() { openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256 -out "$1" 2>/dev/null; }

_ca() {  # name, common name
    _key "$1.key"
    openssl req -x509 -new -key "$1.key" -out "$1.pem" -days 2 -subj "/CN=$2" \
        -addext "basicConstraints=critical,CA:TRUE" \
        -addext "keyUsage=critical,keyCertSign,cRLSign"
}

# `openssl ca` (not `x509 -req`) because only it takes explicit validity dates.
cat > ca.cnf <<'EOF'
[ca]
default_ca = test_ca
[test_ca]
database = ca.index
new_certs_dir = ca.certs
rand_serial = yes
default_md = sha256
policy = any
copy_extensions = copy
unique_subject = no
[any]
commonName = supplied
EOF
rm -rf ca.index ca.certs && touch ca.index && mkdir ca.certs

_signed() {  # issuing CA, name, common name, extension, validity options...
    local ca=$1 name=$2 cn=$3 ext=$4
    shift 4
    _key "$name.key"
    openssl req -new -key "$name.key" -out "$name.csr" -subj "/CN=$cn" -addext "$ext"
    # copy_extensions: the request's extension (subjectAltName, extendedKeyUsage) is kept
    openssl ca -batch -notext -config ca.cnf -cert "$ca.pem" -keyfile "$ca.key" -in "$name.csr" \
        -out "$name.pem" "$@" 2>/dev/null
    rm -f "$name.csr"
}

_p12() {  # store, name
    openssl pkcs12 -export -in "$2.pem" -inkey "$2.key" -certfile ca.pem -name broker \
        -passout "pass:$PASS" -out "$1"
}

_ca ca "msgcap test CA"
_ca other-ca "msgcap unrelated CA"

_signed ca broker "msgcap test broker" "subjectAltName=$SAN" -days 2
_p12 broker.p12 broker
_signed ca broker-expired "msgcap expired broker" "subjectAltName=$SAN" \
    -startdate 20200101000000Z -enddate 20200201000000Z
_p12 broker-expired.p12 broker-expired

_signed ca client "msgcap test client" "extendedKeyUsage=clientAuth" -days 2
_signed other-ca other-client "msgcap foreign client" "extendedKeyUsage=clientAuth" -days 2
rm -f other-ca.key

rm -f truststore.p12
keytool -importcert -noprompt -alias msgcap-test-ca -file ca.pem -keystore truststore.p12 \
    -storetype pkcs12 -storepass "$PASS" >/dev/null 2>&1
rm -rf ca.cnf ca.index* ca.certs
echo "test certificates in $DIR (CA: $DIR/ca.pem; broker subjectAltName $SAN)"
