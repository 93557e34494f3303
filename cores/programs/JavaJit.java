// SPDX-License-Identifier: Apache-2.0
// ehbt fixture (cores/make_nocfi_cores.py, case java_jit): the main thread faults inside
// JIT-compiled code three compiled calls deep. fx_java_level3 stores through a raw address
// (sun.misc.Unsafe, intrinsified by C1/C2 into a plain store); it is warmed up on real
// memory until compiled, the perf map is written by the JVM itself (the Compiler.perfmap
// diagnostic command), then the address 0 is passed: SIGSEGV in compiled code, HotSpot
// reports the crash (hs_err) and aborts with a core.
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

    public static void main(String[] args) throws Exception {
        Field f = Unsafe.class.getDeclaredField("theUnsafe");
        f.setAccessible(true);
        unsafe = (Unsafe) f.get(null);
        long mem = unsafe.allocateMemory(64);
        long sum = 0;
        for (int i = 0; i < 200000; i++) {
            sum += fx_java_level1(mem, i);
        }
        ManagementFactory.getPlatformMBeanServer().invoke(
                new ObjectName("com.sun.management:type=DiagnosticCommand"), "compilerPerfmap",
                new Object[] {null}, new String[] {String[].class.getName()});
        System.out.println("warm " + sum);
        fx_java_level1(0, sum);
    }
}
