// SPDX-License-Identifier: Apache-2.0
// ehbt fixture (cores/make_nocfi_cores.py, case java_jit): the main thread faults inside
// JIT-compiled code three compiled calls deep. fx_java_level3 stores through a raw address
// (sun.misc.Unsafe, intrinsified by C1/C2 into a plain store); it is warmed up on real
// memory until compiled, the perf map is written by the JVM itself (the Compiler.perfmap
// diagnostic command), then the address 0 is passed: SIGSEGV in compiled code, HotSpot
// reports the crash (hs_err) and aborts with a core.
// With the argument `megamorphic` (case java_jit_megamorphic) fx_java_level2 reaches the faulting
// store through a virtual call that has seen three receiver classes: C2 compiles it as an
// inline cache that goes megamorphic, so the call instruction in fx_java_level2 calls HotSpot's
// vtable stub (which jumps through a register to the method), not the callee.
import java.lang.management.ManagementFactory;
import java.lang.reflect.Field;
import javax.management.ObjectName;
import sun.misc.Unsafe;

public class JavaJit {
    static Unsafe unsafe;

    static long fx_java_level3(long addr, long v) {
        unsafe.putLong(addr, v);
        return v + 1;
    }

    static long fx_java_level2(long addr, long v) {
        return fx_java_level3(addr, v * 3) + 2;
    }

    static long fx_java_level1(long addr, long v) {
        return fx_java_level2(addr, v ^ 5) + 7;
    }

    abstract static class Store {
        abstract long fx_java_level3(long addr, long v);
    }

    static final class StoreA extends Store {
        long fx_java_level3(long addr, long v) {
            unsafe.putLong(addr, v);
            return v + 1;
        }
    }

    static final class StoreB extends Store {
        long fx_java_level3(long addr, long v) {
            unsafe.putLong(addr, v ^ 1);
            return v + 2;
        }
    }

    static final class StoreC extends Store {
        long fx_java_level3(long addr, long v) {
            unsafe.putLong(addr, v + 3);
            return v + 3;
        }
    }

    static long fx_java_level2_virtual(Store s, long addr, long v) {
        return s.fx_java_level3(addr, v * 3) + 2;
    }

    static long fx_java_level1_virtual(Store s, long addr, long v) {
        return fx_java_level2_virtual(s, addr, v ^ 5) + 7;
    }

    public static void main(String[] args) throws Exception {
        Field f = Unsafe.class.getDeclaredField("theUnsafe");
        f.setAccessible(true);
        unsafe = (Unsafe) f.get(null);
        long mem = unsafe.allocateMemory(64);
        boolean megamorphic = args.length > 0 && args[0].equals("megamorphic");
        Store[] stores = {new StoreA(), new StoreB(), new StoreC()};
        long sum = 0;
        for (int i = 0; i < 200000; i++) {
            sum += megamorphic ? fx_java_level1_virtual(stores[i % 3], mem, i)
                               : fx_java_level1(mem, i);
        }
        ManagementFactory.getPlatformMBeanServer().invoke(
                new ObjectName("com.sun.management:type=DiagnosticCommand"), "compilerPerfmap",
                new Object[] {null}, new String[] {String[].class.getName()});
        System.out.println("warm " + sum);
        if (megamorphic) {
            fx_java_level1_virtual(stores[0], 0, sum);
        } else {
            fx_java_level1(0, sum);
        }
    }
}
