/* SPDX-License-Identifier: Apache-2.0 */
int cfun1(int v);
