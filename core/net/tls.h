#pragma once
// TLS material for the agent: a self-signed certificate generated on first start, and the
// SHA-256 fingerprint that clients pin (as SSH does with host keys).
#include <filesystem>
#include <string>

namespace crucible::net {

struct CertificatePaths {
    std::filesystem::path cert;  // PEM
    std::filesystem::path key;   // PEM, owner-only
};

// Where an agent with data folder `data_dir` keeps the certificate it makes itself:
// <data>/tls/agent-cert.pem and agent-key.pem.
CertificatePaths self_signed_certificate_paths(const std::filesystem::path& data_dir);

// Creates an EC P-256 key and a self-signed certificate (10 years, CN and subjectAltName =
// host names given + localhost + 127.0.0.1) unless both files exist. Returns the paths.
CertificatePaths ensure_self_signed_certificate(const CertificatePaths& paths,
                                                const std::string& host);

// "AB:CD:..." SHA-256 over the DER encoding of the certificate in a PEM file / PEM text.
std::string certificate_fingerprint_file(const std::filesystem::path& pem);
std::string certificate_fingerprint_pem(const std::string& pem);
// Same for an OpenSSL X509* (passed as void* so that callers need no OpenSSL headers).
std::string certificate_fingerprint_x509(const void* x509);

// Normalizes user-typed fingerprints ("ab cd:..." -> "AB:CD:...").
std::string normalize_fingerprint(const std::string& text);

}  // namespace crucible::net
