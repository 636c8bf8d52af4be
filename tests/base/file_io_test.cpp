#include "core/base/file_io.h"

#include <gtest/gtest.h>

#include "core/base/error.h"
#include "core/base/sha256.h"
#include "tests/support/temp_dir.h"

using namespace crucible;

TEST(Sha256, KnownVectors) {
    EXPECT_EQ(sha256_hex(""), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
    EXPECT_EQ(sha256_hex("abc"),
              "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
    EXPECT_TRUE(constant_time_equal("abc", "abc"));
    EXPECT_FALSE(constant_time_equal("abc", "abd"));
    EXPECT_FALSE(constant_time_equal("abc", "ab"));
    EXPECT_EQ(random_hex(16).size(), 32u);
}

TEST(Sha256, HmacMatchesRfc4231) {
    const auto hex = [](const std::string& raw) {
        std::string out;
        for (unsigned char c : raw)
            out += "0123456789abcdef"[c >> 4], out += "0123456789abcdef"[c & 15];
        return out;
    };
    // RFC 4231 test case 2.
    EXPECT_EQ(hex(hmac_sha256("Jefe", "what do ya want for nothing?")),
              "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843");
    EXPECT_NE(hmac_sha256("Jefe", "a"), hmac_sha256("Jeff", "a"));
}

TEST(FileIo, PathFromUtf8RefusesIllFormedText) {
    EXPECT_THROW(path_from_utf8("\xff"), InputError);
    EXPECT_THROW(path_from_utf8("a\xed\xa0\x80"), InputError);  // a surrogate
    EXPECT_EQ(path_to_utf8(path_from_utf8("数据集/图片.jpg")), "数据集/图片.jpg");
}

TEST(FileIo, GenericUtf8UsesForwardSlashes) {
    // Each part through path_from_utf8: a narrow literal would be read in the ANSI code page.
    const auto p = path_from_utf8("数据集") / path_from_utf8("权重") / path_from_utf8("José.pt");
    EXPECT_EQ(path_to_generic_utf8(p), "数据集/权重/José.pt");
    EXPECT_EQ(path_to_generic_utf8(path_from_utf8("a/b.txt")), "a/b.txt");
    EXPECT_EQ(path_to_generic_utf8({}), "");
#ifdef _WIN32
    // Backslashes, the native separator, come out as '/' too.
    EXPECT_EQ(path_to_generic_utf8(std::filesystem::path(L"runs\\权重\\best.pt")),
              "runs/权重/best.pt");
#endif
}

TEST(FileIo, AtomicWriteAndChineseNames) {
    const test_support::TempDir scratch("file_io");
    const auto dir = scratch / "crucible_测试_目录";
    auto file = dir / path_from_utf8("权重.bin");
    write_file_atomically(file, "first");
    write_file_atomically(file, "second");
    EXPECT_EQ(read_file_bytes(file), "second");
    EXPECT_EQ(sha256_file(file), sha256_hex("second"));
    EXPECT_EQ(path_to_utf8(file.filename()), "权重.bin");
    // No temp files left behind.
    int n = 0;
    for (auto& e : std::filesystem::directory_iterator(dir))
        (void)e, ++n;
    EXPECT_EQ(n, 1);
    EXPECT_THROW(read_file_bytes(dir), InputError);  // a directory is not a file
    EXPECT_THROW(read_file_bytes_limited(file, 3), InputError);
}

TEST(FileIo, PathInsideRoot) {
    auto root = std::filesystem::temp_directory_path() / "crucible_root";
    EXPECT_TRUE(is_path_inside(root, root / "a" / "b.txt"));
    EXPECT_FALSE(is_path_inside(root, root / ".." / "etc" / "passwd"));
    EXPECT_FALSE(is_path_inside(root, "/etc/passwd"));
    EXPECT_FALSE(is_path_inside(root, root));
}
