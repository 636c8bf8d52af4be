// core/base/direct_write.h: a file written past the file cache reads back byte for byte at every
// size around the block and chunk boundaries (the zero padding of the last block is cut off),
// replaces a longer file, and a write that cannot happen throws an error naming the file.
#include "core/base/direct_write.h"

#include <gtest/gtest.h>

#include <random>
#include <string>

#include "core/base/error.h"
#include "core/base/file_io.h"
#include "tests/support/temp_dir.h"

using namespace crucible;

namespace {

std::string random_bytes(std::size_t n, unsigned seed) {
    std::mt19937 rng(seed);
    std::string out(n, '\0');
    for (auto& c : out)
        c = static_cast<char>(rng() & 0xff);
    return out;
}

}  // namespace

TEST(DirectWrite, ReadsBackByteForByteAtEverySizeAroundTheBoundaries) {
    test_support::TempDir dir("direct_write");
    const auto path = dir / "checkpoint.bin";
    unsigned seed = 1;
    for (const std::size_t n :
         {std::size_t{0}, std::size_t{1}, kDirectBlock - 1, kDirectBlock, kDirectBlock + 1,
          kDirectChunk - 1, kDirectChunk, kDirectChunk + 123, 2 * kDirectChunk + kDirectBlock}) {
        SCOPED_TRACE(n);
        const std::string bytes = random_bytes(n, seed++);
        if (!write_file_direct(path, bytes))
            GTEST_SKIP() << "the test folder's file system takes no direct I/O; checkpoints are "
                            "then written the ordinary way (CheckpointStore's tests cover it)";
        EXPECT_EQ(std::filesystem::file_size(path), n);
        EXPECT_TRUE(read_file_bytes(path) == bytes);
    }
}

TEST(DirectWrite, ReplacesALongerFile) {
    test_support::TempDir dir("direct_write");
    const auto path = dir / "检查点.ckpt";  // a Chinese name
    write_file_atomically(path, random_bytes(3 * kDirectBlock + 5, 7));
    const std::string bytes = random_bytes(kDirectBlock + 9, 8);
    if (!write_file_direct(path, bytes))
        GTEST_SKIP() << "the test folder's file system takes no direct I/O";
    EXPECT_TRUE(read_file_bytes(path) == bytes);
}

TEST(DirectWrite, AFolderThatIsNotThereIsAnErrorNamingTheFile) {
    test_support::TempDir dir("direct_write");
    const auto path = dir / "missing" / "step-1.ckpt";
    try {
        write_file_direct(path, "bytes");
        FAIL() << "no error";
    } catch (const Error& e) {
        EXPECT_NE(std::string(e.what()).find("step-1.ckpt"), std::string::npos) << e.what();
    }
}
