#!/bin/bash
# The BMP280 on the i2c-stub bus (found by adapter name) answers chip id 0x58
# and its calibration block over SMBus, the transfers a real driver uses, and
# the datasheet compensation of what it returns gives 25.08 degC / 100653.27 Pa.
set -uo pipefail
# shellcheck source=../lib.sh
source /usr/lib/workoutd-hil/lib.sh
name=$TEST_NAME

i2cdetect -l
python3 - "$name" "$BMP280_I2C_ADAPTER_NAME" "$BMP280_I2C_ADDRESS" <<'PY'
import ctypes, fcntl, glob, os, struct, sys
name, adapter, addr = sys.argv[1], sys.argv[2], int(sys.argv[3], 0)
I2C_SLAVE, I2C_FUNCS, I2C_SMBUS = 0x0703, 0x0705, 0x0720
SMBUS_BYTE_DATA, SMBUS_I2C_BLOCK_DATA = 2, 8
# datasheet example calibration (dig_T1..dig_P9) and raw readings
CAL = (27504, 26435, -1000, 36477, -10685, 3024, 2855, 140, -7, 15500, -14600, 6000)
ADC_T, ADC_P = 519888, 415148

buses = [p for p in glob.glob("/sys/bus/i2c/devices/i2c-*") if open(p + "/name").read().strip() == adapter]
if len(buses) != 1:
    print(f"{name}: FAIL ({len(buses)} adapters named '{adapter}')"); sys.exit()
bus = int(buses[0].rsplit("-", 1)[1])
fd = os.open(f"/dev/i2c-{bus}", os.O_RDWR)
funcs = struct.unpack("L", fcntl.ioctl(fd, I2C_FUNCS, struct.pack("L", 0)))[0]
print(f"i2c-{bus} '{adapter}': I2C_FUNCS 0x{funcs:08x}")
fcntl.ioctl(fd, I2C_SLAVE, addr)

class Data(ctypes.Union):
    _fields_ = [("byte", ctypes.c_uint8), ("word", ctypes.c_uint16), ("block", ctypes.c_uint8 * 34)]
class Args(ctypes.Structure):
    _fields_ = [("read_write", ctypes.c_uint8), ("command", ctypes.c_uint8),
                ("size", ctypes.c_uint32), ("data", ctypes.POINTER(Data))]
def smbus(read, reg, size, data):
    fcntl.ioctl(fd, I2C_SMBUS, Args(1 if read else 0, reg, size, ctypes.pointer(data)))
    return data
def read_byte(reg):
    return smbus(True, reg, SMBUS_BYTE_DATA, Data()).byte
def read_block(reg, n):            # SMBus "I2C block" read, <= 32 bytes
    d = Data(); d.block[0] = n
    return bytes(smbus(True, reg, SMBUS_I2C_BLOCK_DATA, d).block[1:1 + n])

problems = []
chip_id = read_byte(0xD0)
print(f"chip id 0x{chip_id:02x}")
if chip_id != 0x58:
    problems.append(f"chip id 0x{chip_id:02x}, want 0x58")
cal = struct.unpack("<HhhHhhhhhhhh", read_block(0x88, 24))
print("calibration", cal)
if cal != CAL:
    problems.append("calibration block differs from the datasheet example")
raw = read_block(0xF7, 6)
adc_p = (raw[0] << 12) | (raw[1] << 4) | (raw[2] >> 4)
adc_t = (raw[3] << 12) | (raw[4] << 4) | (raw[5] >> 4)
if (adc_t, adc_p) != (ADC_T, ADC_P):
    problems.append(f"raw readings {adc_t}/{adc_p}, want {ADC_T}/{ADC_P}")
# datasheet double-precision compensation
T1, T2, T3, P1, P2, P3, P4, P5, P6, P7, P8, P9 = cal
v1 = (adc_t / 16384.0 - T1 / 1024.0) * T2
v2 = ((adc_t / 131072.0 - T1 / 8192.0) ** 2) * T3
t_fine = v1 + v2
temp = t_fine / 5120.0
v1 = t_fine / 2.0 - 64000.0
v2 = v1 * v1 * P6 / 32768.0 + v1 * P5 * 2.0
v2 = v2 / 4.0 + P4 * 65536.0
v1 = (P3 * v1 * v1 / 524288.0 + P2 * v1) / 524288.0
v1 = (1.0 + v1 / 32768.0) * P1
p = (1048576.0 - adc_p - v2 / 4096.0) * 6250.0 / v1
p += (P9 * p * p / 2147483648.0 + p * P8 / 32768.0 + P7) / 16.0
print(f"T = {temp:.4f} degC, P = {p:.2f} Pa")
if abs(temp - 25.08) > 0.01 or abs(p - 100653.27) > 0.05:
    problems.append(f"compensated {temp:.2f} degC / {p:.2f} Pa")
print(f"{name}: " + (f"FAIL ({'; '.join(problems)})" if problems else
      f"PASS (i2c-{bus} @0x{addr:02x}: chip id 0x58, calibration ok, {temp:.2f} degC, {p:.2f} Pa)"))
PY
