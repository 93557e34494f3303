// SPDX-License-Identifier: Apache-2.0
// The signal as the report says it: a sender for a signal a process sent (never an address:
// that word of siginfo is the sender's pid), an address for a fault, and a snapshot (gcore)
// in which no thread crashed.
#include <gtest/gtest.h>

#include "ehbt/report.hpp"

namespace ehbt::report {
namespace {

TEST(ReportSignal, SentSignalNamesItsSenderAndNoAddress) {
  // A front end that hands over the raw si_addr word of a kill(2) (pid 1, uid 0 read as 0x1):
  // the code says there is no address there.
  auto sig = signal_line(11, 0, 0x1, SignalSender{1, 0});
  ASSERT_TRUE(sig.has_value());
  EXPECT_FALSE(sig->address.has_value());
  EXPECT_EQ(describe_signal(*sig), "SIGSEGV, SI_USER sent by pid 1 (uid 0)");
  BacktraceReport r;
  r.arch = "x86_64";
  r.signal = sig;
  const std::string json = render_json(r, JsonOptions{true});
  EXPECT_NE(json.find("\"signal\":{\"number\":11,\"name\":\"SIGSEGV\",\"code\":0,\"address\":null,"
                      "\"sender\":{\"pid\":1,\"uid\":0}}"),
            std::string::npos)
      << json;
}

TEST(ReportSignal, FaultKeepsItsAddressAndDropsASender) {
  auto sig = signal_line(11, 1, 0x0, SignalSender{5, 5});
  ASSERT_TRUE(sig.has_value());
  EXPECT_EQ(sig->address, 0u);
  EXPECT_FALSE(sig->sender.has_value());
  EXPECT_EQ(describe_signal(*sig), "SIGSEGV, SEGV_MAPERR at 0x0");
  BacktraceReport r;
  r.arch = "x86_64";
  r.signal = sig;
  const std::string json = render_json(r, JsonOptions{true});
  // No "sender" key on a fault: the object keeps the shape it always had.
  EXPECT_NE(
      json.find("\"signal\":{\"number\":11,\"name\":\"SIGSEGV\",\"code\":1,\"address\":\"0x0\"}"),
      std::string::npos)
      << json;
}

TEST(ReportSignal, SiKernelZeroIsNoAddress) {
  // x86's int3 and general-protection faults: force_sig() leaves the union zero.
  auto trap = signal_line(5, 0x80, 0x0);
  ASSERT_TRUE(trap.has_value());
  EXPECT_FALSE(trap->address.has_value());
  EXPECT_EQ(describe_signal(*trap), "SIGTRAP, SI_KERNEL");
  auto with = signal_line(11, 0x80, 0x4000);
  EXPECT_EQ(with->address, 0x4000u);
}

TEST(ReportSignal, SnapshotHasNoCrashingThread) {
  BacktraceReport r;
  r.core = "gcore.core";
  r.arch = "x86_64";
  r.snapshot_signal = signal_line(19, 0x80);
  ThreadReport& t = r.threads.emplace_back();
  t.tid = 42;
  const std::string text = render_text(r);
  EXPECT_NE(text.find("Signal: none (no thread crashed: a snapshot, e.g. by gcore; threads "
                      "stopped by SIGSTOP, SI_KERNEL)\n"),
            std::string::npos)
      << text;
  EXPECT_EQ(text.find("(crashed"), std::string::npos) << text;
  EXPECT_NE(render_json(r, JsonOptions{true}).find("\"signal\":null"), std::string::npos);
}

}  // namespace
}  // namespace ehbt::report
