// SPDX-License-Identifier: GPL-2.0
// Prints "<device> <provider>" for every device libibverbs matched to a
// provider: which provider claimed which device. Test use only; reads the
// private verbs_device layout declared in ibverbs_private.h.
#include <cstdio>

#include "ibverbs_private.h"

int main()
{
	int num = 0;
	struct ibv_device **list = ibv_get_device_list(&num);
	if (!list) {
		std::perror("ibv_get_device_list");
		return 1;
	}
	for (int i = 0; i < num; i++) {
		const auto *vdev = reinterpret_cast<const verbs_device *>(list[i]);
		std::printf("%s %s\n", ibv_get_device_name(list[i]), vdev->ops->name);
	}
	ibv_free_device_list(list);
	return 0;
}
