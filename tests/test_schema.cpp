// Tests of the scenario schema (models/spec/schema.hpp) and validate() (models/spec/validate.hpp):
// every key's binding reaches its Scenario member, the loader takes its section lists from the
// table, and validate() names the keys of each rule on typed scenarios, as the planner uses it.
#include <catch2/catch.hpp>

#include <set>
#include <string>

#include "models/spec/scenario_loader.hpp"
#include "models/spec/schema.hpp"
#include "models/spec/validate.hpp"

using namespace dtwin;

namespace {

const std::string kQuickstart = std::string(DTWIN_SOURCE_DIR) + "/scenarios/quickstart.yaml";

/// A value of `field`'s kind other than the one `scenario` holds (and within its range).
FieldValue other_value(const FieldSpec& field, const Scenario& scenario) {
  const FieldValue now = field.get(scenario);
  switch (field.kind) {
    case FieldKind::Integer:
      return std::get<long long>(now) + 1 <= (field.max > 0 ? field.max : 1000000)
                 ? std::get<long long>(now) + 1
                 : std::get<long long>(now) - 1;
    case FieldKind::Quantity:
      return std::get<double>(now) * 0.75 + 0.1;
    case FieldKind::Boolean:
      return !std::get<bool>(now);
    case FieldKind::Choice:
      return field.choices.back() == std::get<std::string>(now) ? field.choices.front()
                                                                : field.choices.back();
    case FieldKind::Text:
      return std::get<std::string>(now) + "x";
    case FieldKind::IntList:
      return std::vector<int>{7, 8};
    case FieldKind::Section:
      break;
  }
  return now;
}

/// The keys validate() names first, one per violation.
std::set<std::string> blamed(const Scenario& scenario) {
  std::set<std::string> keys;
  for (const Violation& v : validate(scenario)) keys.insert(v.keys.front());
  return keys;
}

}  // namespace

TEST_CASE("every schema key is bound to its own Scenario member", "[scenario][schema]") {
  const Scenario base = load_scenario(kQuickstart);
  std::set<std::string> paths;
  for (const FieldSpec& field : scenario_fields()) {
    INFO(field.path);
    CHECK(paths.insert(field.path).second);  // declared once
    CHECK(!field.meaning.empty());
    if (field.kind == FieldKind::Section || field.choices.size() == 1) continue;  // one value
    Scenario changed = base;
    const FieldValue value = other_value(field, base);
    REQUIRE(value != field.get(base));
    field.set(changed, value);
    CHECK(field.get(changed) == value);
    // No other key moved: each binding names a member of its own.
    for (const FieldSpec& other : scenario_fields())
      if (other.kind != FieldKind::Section && other.path != field.path)
        CHECK(other.get(changed) == other.get(base));
  }
}

TEST_CASE("the loader refuses every key outside the schema, listing the table's keys",
          "[scenario][schema]") {
  for (const char* section : {"model", "layout", "training", "cluster", "runtime"}) {
    INFO(section);
    std::string names;
    for (const FieldSpec* f : section_fields(section))
      names += (names.empty() ? "" : ", ") + f->name();
    try {
      load_scenario(kQuickstart, {std::string(section) + ".no_such_key=1"});
      FAIL("loaded an unknown key");
    } catch (const ConfigError& e) {
      CHECK_THAT(e.what(), Catch::Contains("unknown key (expected one of: " + names + ")"));
    }
  }
}

TEST_CASE("validate() names the keys of each rule on typed scenarios", "[scenario][schema]") {
  const Scenario base = load_scenario(kQuickstart);  // dp 1, pp 3, 6 layers, 6 heads, 3 ranks
  CHECK(validate(base).empty());

  Scenario s = base;
  s.layout.tp = 4;  // 6 heads, and 4 * 3 ranks != 3 slots
  CHECK(blamed(s) == std::set<std::string>{"layout.tp", "layout.dp"});

  s = base;
  s.layout.zero = 2;  // ZeRO needs dp > 1
  CHECK(blamed(s) == std::set<std::string>{"layout.zero"});

  s = base;
  s.layout.zero = 4;  // out of range: only the range is reported
  const std::vector<Violation> range = validate(s);
  REQUIRE(range.size() == 1);
  CHECK(range[0].message(s) == "layout.zero: expected 0, 1, 2 or 3, got '4'");

  s = base;
  s.layout.schedule = sched::ScheduleKind::Interleaved1F1B;
  s.layout.virtual_stages = 2;
  s.layout.microbatches = 4;  // not a multiple of pp = 3
  CHECK(blamed(s) == std::set<std::string>{"layout.microbatches"});

  s = base;
  s.model.n_kv_heads = 4;  // not a divisor of the 6 heads
  CHECK(blamed(s) == std::set<std::string>{"model.n_kv_heads"});
  s.layout.tp = 2;
  s.cluster.ranks_per_device = 6;
  for (const int kv : {1, 2, 6}) {  // replicated on 2 GPUs each, split, one per head
    s.model.n_kv_heads = kv;
    CHECK(validate(s).empty());
  }
  s.model.n_kv_heads = 3;  // neither a multiple nor a divisor of tp 2
  CHECK(blamed(s) == std::set<std::string>{"layout.tp"});

  s = base;
  s.layout.bucket_size = 0;  // an optional key at its default is valid
  s.cluster.device.host_link = {};
  CHECK(validate(s).empty());
  s.cluster.device.peak_flops = 0;  // a required key is checked at any value
  CHECK(blamed(s) == std::set<std::string>{"cluster.device.peak_flops"});
}
