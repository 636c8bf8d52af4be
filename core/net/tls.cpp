#include "core/net/tls.h"

#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>

#include <cctype>
#include <memory>

#include "core/base/error.h"
#include "core/base/file_io.h"

namespace crucible::net {
namespace {

template <typename T, void (*F)(T*)>
struct Deleter {
    void operator()(T* p) const { F(p); }
};
using PkeyPtr = std::unique_ptr<EVP_PKEY, Deleter<EVP_PKEY, EVP_PKEY_free>>;
using X509Ptr = std::unique_ptr<X509, Deleter<X509, X509_free>>;
using BioPtr = std::unique_ptr<BIO, Deleter<BIO, BIO_free_all>>;

std::string bio_text(BIO* bio) {
    char* data = nullptr;
    long n = BIO_get_mem_data(bio, &data);
    return std::string(data, static_cast<std::size_t>(n));
}

void add_extension(X509* cert, int nid, const std::string& value) {
    X509V3_CTX ctx;
    X509V3_set_ctx_nodb(&ctx);
    X509V3_set_ctx(&ctx, cert, cert, nullptr, nullptr, 0);
    X509_EXTENSION* ext = X509V3_EXT_conf_nid(nullptr, &ctx, nid, value.c_str());
    if (!ext) throw Error("TLS: cannot build certificate extension");
    X509_add_ext(cert, ext, -1);
    X509_EXTENSION_free(ext);
}

}  // namespace

CertificatePaths self_signed_certificate_paths(const std::filesystem::path& data_dir) {
    return {data_dir / "tls" / "agent-cert.pem", data_dir / "tls" / "agent-key.pem"};
}

CertificatePaths ensure_self_signed_certificate(const CertificatePaths& paths,
                                                const std::string& host) {
    std::error_code ec;
    if (std::filesystem::exists(paths.cert, ec) && std::filesystem::exists(paths.key, ec))
        return paths;
    std::filesystem::create_directories(paths.cert.parent_path());

    PkeyPtr key(EVP_EC_gen("P-256"));
    if (!key) throw Error("TLS: cannot generate an EC key");
    X509Ptr cert(X509_new());
    X509_set_version(cert.get(), 2);
    ASN1_INTEGER_set(X509_get_serialNumber(cert.get()), static_cast<long>(std::time(nullptr)));
    X509_gmtime_adj(X509_getm_notBefore(cert.get()), -3600);
    X509_gmtime_adj(X509_getm_notAfter(cert.get()), 60L * 60 * 24 * 3650);
    X509_set_pubkey(cert.get(), key.get());
    X509_NAME* name = X509_get_subject_name(cert.get());
    const std::string cn = host.empty() ? "crucible-agent" : host;
    X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_UTF8,
                               reinterpret_cast<const unsigned char*>(cn.c_str()), -1, -1, 0);
    X509_NAME_add_entry_by_txt(name, "O", MBSTRING_UTF8,
                               reinterpret_cast<const unsigned char*>("Crucible"), -1, -1, 0);
    X509_set_issuer_name(cert.get(), name);
    std::string san = "DNS:localhost,IP:127.0.0.1";
    if (!host.empty() && host != "localhost" && host != "127.0.0.1" && host != "0.0.0.0") {
        bool ip = host.find_first_not_of("0123456789.") == std::string::npos ||
                  host.find(':') != std::string::npos;
        san += std::string(ip ? ",IP:" : ",DNS:") + host;
    }
    add_extension(cert.get(), NID_subject_alt_name, san);
    add_extension(cert.get(), NID_basic_constraints, "critical,CA:FALSE");
    if (X509_sign(cert.get(), key.get(), EVP_sha256()) == 0)
        throw Error("TLS: cannot sign the certificate");

    BioPtr key_bio(BIO_new(BIO_s_mem()));
    PEM_write_bio_PrivateKey(key_bio.get(), key.get(), nullptr, nullptr, 0, nullptr, nullptr);
    BioPtr cert_bio(BIO_new(BIO_s_mem()));
    PEM_write_bio_X509(cert_bio.get(), cert.get());
    write_file_atomically(paths.key, bio_text(key_bio.get()));
    std::filesystem::permissions(
        paths.key, std::filesystem::perms::owner_read | std::filesystem::perms::owner_write,
        std::filesystem::perm_options::replace, ec);
    write_file_atomically(paths.cert, bio_text(cert_bio.get()));
    return paths;
}

std::string certificate_fingerprint_x509(const void* x509) {
    unsigned char md[EVP_MAX_MD_SIZE];
    unsigned int n = 0;
    if (!x509 || X509_digest(static_cast<const X509*>(x509), EVP_sha256(), md, &n) != 1)
        throw Error("TLS: cannot compute the certificate fingerprint");
    static const char* hex = "0123456789ABCDEF";
    std::string out;
    for (unsigned i = 0; i < n; ++i) {
        if (i) out += ':';
        out += hex[md[i] >> 4];
        out += hex[md[i] & 15];
    }
    return out;
}

std::string certificate_fingerprint_pem(const std::string& pem) {
    BioPtr bio(BIO_new_mem_buf(pem.data(), static_cast<int>(pem.size())));
    X509Ptr cert(PEM_read_bio_X509(bio.get(), nullptr, nullptr, nullptr));
    if (!cert) throw InputError("certificate", "not a PEM certificate");
    return certificate_fingerprint_x509(cert.get());
}

std::string certificate_fingerprint_file(const std::filesystem::path& pem) {
    return certificate_fingerprint_pem(read_file_bytes_limited(pem, 1 << 20));
}

std::string normalize_fingerprint(const std::string& text) {
    std::string hex;
    for (char c : text)
        if (std::isxdigit(static_cast<unsigned char>(c)))
            hex += static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
    std::string out;
    for (std::size_t i = 0; i < hex.size(); i += 2) {
        if (i) out += ':';
        out += hex.substr(i, 2);
    }
    return out;
}

}  // namespace crucible::net
