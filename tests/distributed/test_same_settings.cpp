// check_same_settings: ranks started with different settings are refused on every rank, with each
// differing setting and each rank's value in one message.
#include "distributed/same_settings.h"

#include "tests/support/testing.h"

namespace sg::distributed {
namespace {

TEST(DistributedSameSettingsTest, EqualSettingsPass) {
  auto group = default_group();
  check_same_settings(*group, {{"--batch", "80"}, {"--out", "runs/a b"}, {"--empty", ""}}, "test");
  check_same_settings(*group, {}, "test");
}

TEST(DistributedSameSettingsTest, EachDifferingSettingIsNamedWithEveryRanksValue) {
  auto group = default_group();
  if (group->world_size() < 2) GTEST_SKIP() << "needs 2 ranks (ctest: distributed.np2)";
  const int r = group->rank();
  const Settings mine = {{"--task", "copy"},
                         {"--batch", r == 0 ? "80" : "40"},
                         {"--seed", std::to_string(r)},
                         {"--steps", "100"}};
  EXPECT_SG_ERROR(check_same_settings(*group, mine, "copy_task train"),
                  "copy_task train: the ranks were started with different settings: --batch is "
                  "'80' on rank 0, '40' on rank 1; --seed is '0' on rank 0, '1' on rank 1; every "
                  "rank must be given the same flags");
  try {
    check_same_settings(*group, mine, "x");
    ADD_FAILURE() << "no error";
  } catch (const RanksDisagree&) {  // the type the program ends on without aborting
  }
  // A setting one rank lacks (another version of the program, say).
  Settings extra = {{"--task", "copy"}};
  if (r == 1) extra.emplace_back("--zero1", "true");
  EXPECT_SG_ERROR(check_same_settings(*group, extra, "x"),
                  "--zero1 is unset on rank 0, 'true' on rank 1");
}

TEST(DistributedSameSettingsTest, StringsOfAnyLengthGoAround) {
  auto group = default_group();
  const std::string mine(static_cast<size_t>(3 + 10 * group->rank()),
                         static_cast<char>('a' + group->rank()));
  const std::vector<std::string> all = all_gather_strings(*group, mine);
  ASSERT_EQ(all.size(), static_cast<size_t>(group->world_size()));
  for (int q = 0; q < group->world_size(); ++q) {
    EXPECT_EQ(all[static_cast<size_t>(q)],
              std::string(static_cast<size_t>(3 + 10 * q), static_cast<char>('a' + q)));
  }
}

}  // namespace
}  // namespace sg::distributed
