// The program's malloc: tcmalloc where the build links it (SCRATCHGRAD_TCMALLOC, the default),
// because every op allocates its shapes, tensor and graph node on the heap and glibc's malloc
// was ~10% of the tiny training step (docs/design.md). A linker that drops libraries nothing
// names (--as-needed) would leave it out without a word; this catches that.
#include <dlfcn.h>

#include <cstdlib>

#include "tests/support/testing.h"

namespace sg {
namespace {

TEST(BackendMalloc, TheProgramsMallocIsTcmallocWhereTheBuildLinksIt) {
  void* tc_malloc = dlsym(RTLD_DEFAULT, "tc_malloc");
  if (!SG_EXPECT_TCMALLOC) {
    GTEST_SKIP() << "this build does not link tcmalloc (-DSCRATCHGRAD_TCMALLOC=OFF, sanitizers, "
                    "or libtcmalloc-minimal4 not installed)";
  }
  ASSERT_NE(tc_malloc, nullptr) << "tcmalloc is not loaded: was it dropped by --as-needed?";
  // The malloc every call resolves to is tcmalloc's (it exports malloc as an alias of tc_malloc).
  EXPECT_EQ(dlsym(RTLD_DEFAULT, "malloc"), tc_malloc);
  void* block = std::malloc(24);
  EXPECT_NE(block, nullptr);
  std::free(block);
}

}  // namespace
}  // namespace sg
