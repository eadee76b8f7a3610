#!/usr/bin/env python3
"""Plays motion into a BMI160 on i2c-stub: its accelerometer and gyroscope data registers
(BST-BMI160-DS000 §2.11.4, DATA 0x0C..0x17: gyro x, y, z then accel x, y, z, little-endian)
written with the I2C_SMBUS ioctl (i2c-stub is SMBus only), fast enough to change the
reading between the driver's 100 Hz samples; a process per write (i2cset) is not, under TCG.

    imu_motion.py BUS ADDRESS LSB_PER_G STEP...

Each STEP is "SECONDS:AX,AY,AZ[:GX,GY,GZ]" (g, and raw gyroscope LSBs), or
"SECONDS:buzz:AMPLITUDE" (1 g on z with AMPLITUDE g alternating on it at 25 Hz: a road).
"""
import ctypes
import fcntl
import os
import struct
import sys
import time

I2C_SLAVE_FORCE = 0x0706
I2C_SMBUS = 0x0720
I2C_SMBUS_WRITE = 0
I2C_SMBUS_I2C_BLOCK_DATA = 8
DATA = 0x0C


def write_block(fd, register, payload):
    """struct i2c_smbus_ioctl_data (linux/i2c-dev.h): read_write, command, size, and a pointer to
    union i2c_smbus_data, whose block[0] is the length (linux/i2c.h)."""
    data = (ctypes.c_ubyte * 34)()
    data[0] = len(payload)
    for index, byte in enumerate(payload):
        data[1 + index] = byte
    args = struct.pack("@BBxxIP", I2C_SMBUS_WRITE, register, I2C_SMBUS_I2C_BLOCK_DATA, ctypes.addressof(data))
    fcntl.ioctl(fd, I2C_SMBUS, args)


def reading(lsb_per_g, accel, gyro=(0, 0, 0)):
    raw = [int(round(a * lsb_per_g)) for a in accel]
    raw = [max(-32768, min(32767, value)) for value in raw]
    return struct.pack("<3h3h", *gyro, *raw)


def main():
    bus, address, lsb_per_g = int(sys.argv[1]), int(sys.argv[2], 0), float(sys.argv[3])
    fd = os.open(f"/dev/i2c-{bus}", os.O_RDWR)
    fcntl.ioctl(fd, I2C_SLAVE_FORCE, address)
    for step in sys.argv[4:]:
        parts = step.split(":")
        seconds = float(parts[0])
        end = time.monotonic() + seconds
        if parts[1] == "buzz":
            amplitude, sign = float(parts[2]), 1
            while time.monotonic() < end:
                write_block(fd, DATA, reading(lsb_per_g, (0, 0, 1 + sign * amplitude)))
                sign = -sign
                time.sleep(0.02)
            continue
        accel = tuple(float(v) for v in parts[1].split(","))
        gyro = tuple(int(v) for v in parts[2].split(",")) if len(parts) > 2 else (0, 0, 0)
        write_block(fd, DATA, reading(lsb_per_g, accel, gyro))
        time.sleep(max(0.0, end - time.monotonic()))
    os.close(fd)


if __name__ == "__main__":
    main()
