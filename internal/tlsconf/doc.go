// Package tlsconf builds the *tls.Config of raftmq's servers and clients
// from PEM files: a certificate and its key, and an optional CA bundle.
//
// Server configurations read the files again when they change, without a
// restart: every handshake asks for the current certificate (and, with
// mutual TLS, the current CA pool), and at most once per CheckInterval the
// files' size, modification time and identity are compared with what was
// loaded. A changed file that does not load (half written, mismatched key,
// expired) keeps the previous certificate and is logged; the next check
// tries again. Client configurations reload their own certificate the same
// way; the CA they verify servers against is read once.
//
// Errors name the file and say what is wrong with it: missing, not PEM,
// key not matching the certificate, expired or not yet valid.
package tlsconf
