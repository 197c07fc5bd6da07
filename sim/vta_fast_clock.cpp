// vta_fast_clock.cpp: a native clock loop for the Verilator build of vta_tb.
//
// cocotb's GPI clock costs two VPI timer callbacks, two value puts and their
// bookkeeping per cycle, more than the design's own evaluation.  While a run
// executes, nothing in Python needs to see individual cycles, so the harness
// (sim/vta_harness.py) calls vta_fast_run() through ctypes from a ReadWrite
// callback: this loop toggles clk itself until irq or wd_fire rises, and
// returns with clk high, as the GPI clock left it.  cocotb's simulated time
// does not advance meanwhile (the testbench counts cycles itself), so the
// harness does not use it when a waveform is being dumped.
//
// The simulator's main() (cocotb's verilator.cpp) sets vta_fast_top once the
// model exists; the vta build adds that line (vta.hdltools.build, main_init).

#include "Vtop.h"
#include "verilated.h"

Vtop* vta_fast_top = nullptr;

extern "C" __attribute__((visibility("default")))
unsigned long long vta_fast_run(unsigned long long max_cycles) {
    Vtop* top = vta_fast_top;
    if (top == nullptr || !top->clk) return ~0ULL;  // not set up, or clk not high
    unsigned long long n = 0;
    while (n < max_cycles) {
        top->clk = 0;
        top->eval();
        top->clk = 1;
        top->eval();
        ++n;
        if (top->irq || top->wd_fire || Verilated::gotFinish()) break;
    }
    return n;
}

// Coverage of a build made with --coverage (vta.driver.rtl, option coverage): write the
// counts gathered so far to `path` (Verilator's coverage.dat format) and, with `zero`,
// start counting from zero again, so that successive files hold disjoint increments.
// Returns 0 in a build without coverage.
#if VM_COVERAGE
#include "verilated_cov.h"

extern "C" __attribute__((visibility("default")))
int vta_coverage_write(const char* path, int zero) {
    VerilatedCovContext* cov = Verilated::threadContextp()->coveragep();
    cov->write(path);
    if (zero) cov->zero();
    return 1;
}
#else
extern "C" __attribute__((visibility("default")))
int vta_coverage_write(const char*, int) { return 0; }
#endif
