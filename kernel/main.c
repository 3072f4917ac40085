// SPDX-License-Identifier: GPL-2.0
/*
 * sroce - software RoCE v2 RDMA device.
 *
 * Module entry points, the "sroce" rdma link type and the netdev notifier
 * that ties each sroce device to the life of its Ethernet netdev.
 *
 * Device list rules
 * -----------------
 * Out-of-tree drivers share RDMA_DRIVER_UNKNOWN, so ib_core cannot find "our"
 * devices for us and ib_unregister_driver() is off limits. sroce_devs holds
 * every device this module created, protected by sroce_devs_lock:
 *
 *  - newlink puts an entry on the list (under RTNL, so the notifier sees a
 *    consistent netdev state) before registering it. The list owns a
 *    get_device() reference, so the memory stays valid while listed.
 *  - dealloc_driver, the last op ib_core calls, marks the entry dead, then
 *    drops the namespace's sockets and the netdev reference and marks it
 *    released; it leaves it on the list.
 *  - A dead entry is reaped (removed and its reference put) only after
 *    calling ib_unregister_device() on it. For a device that is already
 *    unregistered this just waits for ib_core's unregistration lock, which
 *    whoever ran dealloc_driver holds until it is back in ib_core code. So
 *    once module exit has reaped the last entry, no thread can still be
 *    executing this module's code for a device. This is the fence that
 *    ib_unregister_driver() would otherwise provide; queued unregistrations
 *    (from the notifier) are covered by it as well, since a queued work
 *    item only calls into the module through dealloc_driver.
 *  - Lookups by netdev skip dead entries. The notifier takes a registration
 *    reference (ib_device_try_get) under the lock and calls into ib_core
 *    only after dropping it.
 *  - The notifier leaves a device alone until newlink has finished
 *    ib_register_device() and marked it registered (under RTNL, then
 *    catching up on what the notifier saw meanwhile). ib_core gives the
 *    device its references a moment before it makes the device visible to
 *    unregistration, so a reference taken in between would let an
 *    unregistration run ahead of the registration: it would tear down a
 *    device not yet set up and then wait for ever for the references the
 *    registration hands out afterwards.
 *  - The receive path (net.c, softirq) finds devices by netdev in
 *    sroce_ndev_hash under RCU. An entry is hashed together with being
 *    listed and unhashed when dealloc_driver marks it dead; dealloc_driver
 *    then waits a grace period before freeing what receive uses (the
 *    counters). The memory of the sroce_dev itself outlives any reader
 *    anyway: the list's reference keeps it until reaped, and ib_core frees
 *    it with kfree_rcu().
 *  - Every device belongs to the network namespace its netdev was in when
 *    it was created (sdev->net, never changed) and holds a reference on
 *    that namespace's UDP port 4791 sockets (net.c), taken in newlink
 *    before the device exists and dropped in dealloc_driver, so the
 *    sockets go away with the namespace's last device. It holds no
 *    reference on the namespace itself: when a namespace is deleted, its
 *    exit method (net.c) unregisters the namespace's devices with
 *    sroce_forget_devs(), which also waits for the ones being unregistered
 *    elsewhere, before the namespace is freed. Module exit does the same
 *    for all devices, through every namespace's exit method (so a
 *    namespace deleted meanwhile waits for it) and then for what is left.
 *
 * Lock order: RTNL -> sroce_devs_lock, and ib_core's per-device
 * unregistration lock -> sroce_devs_lock; the socket lock of net.c
 * (sroce_net_lock) is taken with neither of ours held, under ib_core's
 * link_ops_rwsem (newlink) or unregistration lock (dealloc_driver, also
 * called from a namespace's exit method).
 * Nothing here takes RTNL or calls into ib_core while holding
 * sroce_devs_lock, and nothing waits for an unregistration while holding
 * RTNL.
 */

#include <linux/hashtable.h>
#include <linux/if_arp.h>
#include <linux/if_vlan.h>
#include <linux/module.h>
#include <linux/mutex.h>
#include <linux/rtnetlink.h>
#include <net/net_namespace.h>
#include <rdma/rdma_netlink.h>

#include "sroce.h"

static LIST_HEAD(sroce_devs);
static DEFINE_MUTEX(sroce_devs_lock);
static DEFINE_HASHTABLE(sroce_ndev_hash, 6);	/* RCU, sroce_devs_lock */

/* Under rcu_read_lock(); the result is valid until rcu_read_unlock(). */
struct sroce_dev *sroce_dev_by_ndev_rcu(const struct net_device *ndev)
{
	struct sroce_dev *sdev;

	hash_for_each_possible_rcu(sroce_ndev_hash, sdev, hnode,
				   (unsigned long)ndev)
		if (sdev->rx_ndev == ndev)
			return sdev;
	return NULL;
}

static struct sroce_dev *sroce_find_live(const struct net_device *ndev)
{
	struct sroce_dev *sdev;

	lockdep_assert_held(&sroce_devs_lock);

	list_for_each_entry(sdev, &sroce_devs, list)
		if (!sdev->dead && sdev->ndev == ndev)
			return sdev;
	return NULL;
}

/*
 * Drop the list's reference on an entry already taken off the list.
 * Unregisters the device if it is still registered, otherwise waits for
 * the thread that unregistered it to leave ib_core's unregistration path.
 */
static void sroce_forget(struct sroce_dev *sdev)
{
	ib_unregister_device(&sdev->ibdev);
	put_device(&sdev->ibdev.dev);
}

/*
 * Reap the entries whose dealloc_driver has finished. One still in it stays
 * listed: a namespace's exit must find it (sroce_forget_devs()) and wait
 * until it no longer uses the namespace.
 */
static void sroce_reap_dead(void)
{
	struct sroce_dev *sdev, *tmp;
	LIST_HEAD(dead);

	mutex_lock(&sroce_devs_lock);
	list_for_each_entry_safe(sdev, tmp, &sroce_devs, list)
		if (sdev->released)
			list_move_tail(&sdev->list, &dead);
	mutex_unlock(&sroce_devs_lock);

	list_for_each_entry_safe(sdev, tmp, &dead, list) {
		list_del_init(&sdev->list);
		sroce_forget(sdev);
	}
}

/**
 * sroce_forget_devs - unregister and forget the devices of a namespace
 * @net: the namespace, or NULL for every device
 *
 * Takes the devices that belong to @net off the list and unregisters them,
 * waiting for those that are being unregistered by someone else (a queued
 * unregistration after NETDEV_UNREGISTER). When it returns, none of them
 * uses @net or runs code of this module any more.
 */
void sroce_forget_devs(const struct net *net)
{
	struct sroce_dev *sdev, *found;

	for (;;) {
		found = NULL;
		mutex_lock(&sroce_devs_lock);
		list_for_each_entry(sdev, &sroce_devs, list) {
			if (!net || net_eq(sdev->net, net)) {
				list_del_init(&sdev->list);
				found = sdev;
				break;
			}
		}
		mutex_unlock(&sroce_devs_lock);
		if (!found)
			break;
		sroce_forget(found);
	}
}

void sroce_dealloc_driver(struct ib_device *ibdev)
{
	struct sroce_dev *sdev = to_sdev(ibdev);
	struct net_device *ndev;

	ida_destroy(&sdev->pd_ida);
	sroce_mcast_fini_dev(sdev);
	sroce_mw_fini_dev(sdev);
	sroce_mr_fini_dev(sdev);
	sroce_qp_fini_dev(sdev);
	sroce_srq_fini_dev(sdev);
	sroce_ah_fini_dev(sdev);

	mutex_lock(&sroce_devs_lock);
	sdev->dead = true;
	hash_del_rcu(&sdev->hnode);
	ndev = sdev->ndev;
	WRITE_ONCE(sdev->ndev, NULL);
	mutex_unlock(&sroce_devs_lock);

	/* No receive is still looking at the device's counters. */
	synchronize_rcu();
	sroce_net_fini_dev(sdev);
	sroce_net_free_stats(sdev);
	if (sdev->net)
		sroce_net_put(sdev->net);

	netdev_put(ndev, &sdev->ndev_tracker);

	mutex_lock(&sroce_devs_lock);
	sdev->released = true;
	mutex_unlock(&sroce_devs_lock);
}

/* Called under RTNL with a registration reference on the device. */
static void sroce_port_update(struct sroce_dev *sdev, struct net_device *ndev)
{
	enum ib_port_state state = sroce_port_state(ndev);
	struct ib_event event = {
		.device = &sdev->ibdev,
		.element.port_num = SROCE_PORT,
	};

	ASSERT_RTNL();

	sroce_cc_link_update(sdev, ndev);
	if (state == sdev->port_state)
		return;
	sdev->port_state = state;

	event.event = state == IB_PORT_ACTIVE ? IB_EVENT_PORT_ACTIVE :
						IB_EVENT_PORT_ERR;
	ib_dispatch_event(&event);
}

/*
 * Put a new device on the list and in the receive hash, unless the netdev
 * is going away or has a live sroce device already.
 */
static int sroce_dev_publish(struct sroce_dev *sdev, struct net_device *ndev)
{
	int err;

	/*
	 * Under RTNL the netdev is either registered, and then its
	 * NETDEV_UNREGISTER will find the device on the list, or already on
	 * its way out. The same goes for a move to another namespace since
	 * newlink looked: the device would not hear of it.
	 */
	rtnl_lock();
	if (ndev->reg_state != NETREG_REGISTERED ||
	    !net_eq(dev_net(ndev), sdev->net))
		err = -ENODEV;
	else
		err = ib_device_set_netdev(&sdev->ibdev, ndev, SROCE_PORT);
	if (!err) {
		mutex_lock(&sroce_devs_lock);
		if (sroce_find_live(ndev)) {
			err = -EEXIST;
		} else {
			sdev->port_state = sroce_port_state(ndev);
			sroce_cc_link_update(sdev, ndev);
			get_device(&sdev->ibdev.dev);
			list_add_tail(&sdev->list, &sroce_devs);
			hash_add_rcu(sroce_ndev_hash, &sdev->hnode,
				     (unsigned long)ndev);
		}
		mutex_unlock(&sroce_devs_lock);
	}
	rtnl_unlock();
	return err;
}

/*
 * The notifier leaves a device alone until it is marked registered here (see
 * the list rules above). Catch up on what happened to the netdev meanwhile:
 * if it is going away, unregister; otherwise report a port state change.
 */
static void sroce_dev_catch_up(struct sroce_dev *sdev, struct net_device *ndev)
{
	rtnl_lock();
	mutex_lock(&sroce_devs_lock);
	sdev->registered = true;
	mutex_unlock(&sroce_devs_lock);
	if (ib_device_try_get(&sdev->ibdev)) {
		if (sdev->ndev_gone) {
			ib_unregister_device_queued(&sdev->ibdev);
		} else {
			sroce_port_update(sdev, ndev);
			ibdev_info(&sdev->ibdev, "attached to %s\n",
				   netdev_name(ndev));
		}
		ib_device_put(&sdev->ibdev);
	}
	rtnl_unlock();
}

static int sroce_newlink(const char *ibdev_name, struct net_device *ndev)
{
	struct sroce_dev *sdev;
	struct net *net;
	int err = 0;

	sroce_reap_dead();

	if (ndev->type != ARPHRD_ETHER || ndev->addr_len != ETH_ALEN)
		return -EINVAL;
	/*
	 * ib_core gives a VLAN netdev's addresses to the RoCE devices of its
	 * real device, never to one on the VLAN netdev itself: such a device
	 * would have no IP GIDs, yet take the VLAN's packets (rdma_rxe
	 * refuses it too).
	 */
	if (is_vlan_dev(ndev)) {
		pr_info("sroce: %s is a VLAN netdev; add the link on %s, whose device has the VLAN's GIDs\n",
			netdev_name(ndev), netdev_name(vlan_dev_real_dev(ndev)));
		return -EOPNOTSUPP;
	}
	/*
	 * An upper netdev (a macvlan, a bridge, a bond) of one that has an
	 * sroce device in the same namespace: that device holds the upper
	 * netdev's GIDs already, and a second device would take the packets
	 * sent to them.
	 */
	rcu_read_lock();
	sdev = sroce_any_dev_below_rcu(ndev);
	if (sdev && net_eq(sdev->net, dev_net(ndev))) {
		/* NULL once the device is being freed; its netdev is put a grace period later */
		struct net_device *lower = READ_ONCE(sdev->ndev);

		pr_info("sroce: %s lies over %s, whose sroce device %s has its GIDs\n",
			netdev_name(ndev), lower ? netdev_name(lower) : "a netdev",
			dev_name(&sdev->ibdev.dev));
	} else {
		sdev = NULL;
	}
	rcu_read_unlock();
	if (sdev)
		return -EBUSY;

	/*
	 * The netdev's namespace, kept from going away until the device is
	 * on the list, where that namespace's exit method finds it.
	 */
	net = maybe_get_net(dev_net(ndev));
	if (!net)
		return -ENODEV;

	/* The UDP port first: it fails if rdma_rxe has it. */
	err = sroce_net_get(net, ibdev_name);
	if (err)
		goto out_net;

	sdev = ib_alloc_device(sroce_dev, ibdev);
	if (!sdev) {
		sroce_net_put(net);
		err = -ENOMEM;
		goto out_net;
	}
	sdev->net = net;

	/* Our own reference: a concurrent newlink may reap the list's. */
	get_device(&sdev->ibdev.dev);

	INIT_LIST_HEAD(&sdev->list);
	INIT_HLIST_NODE(&sdev->hnode);
	sdev->rx_ndev = ndev;
	ida_init(&sdev->pd_ida);
	sroce_mr_init_dev(sdev);
	sroce_mw_init_dev(sdev);
	sroce_mcast_init_dev(sdev);
	sroce_qp_init_dev(sdev);
	sroce_srq_init_dev(sdev);
	sroce_ah_init_dev(sdev);
	sroce_net_init_dev(sdev);
	sroce_cc_init_dev(sdev);
	atomic_set(&sdev->num_cq, 0);
	netdev_hold(ndev, &sdev->ndev_tracker, GFP_KERNEL);
	sdev->ndev = ndev;
	sroce_setup_ibdev(sdev);
	/*
	 * Under the netdev's own parent (virtio device, PCI function), as a
	 * hardware NIC's RDMA device is: device/net/<netdev> exists, which is
	 * how topology-aware software (rdma-core's tests, hwloc, NCCL, UCX)
	 * finds the netdev. DMA stays virtual: ib_register_device() is given
	 * no DMA device.
	 */
	sdev->ibdev.dev.parent = ndev->dev.parent;
	err = sroce_net_alloc_stats(sdev);
	if (err)
		goto err_dealloc;

	err = sroce_dev_publish(sdev, ndev);
	if (err)
		goto err_dealloc;

	err = ib_register_device(&sdev->ibdev, ibdev_name, NULL);
	if (err) {
		mutex_lock(&sroce_devs_lock);
		list_del_init(&sdev->list);
		hash_del_rcu(&sdev->hnode);
		mutex_unlock(&sroce_devs_lock);
		put_device(&sdev->ibdev.dev);
		goto err_dealloc;
	}

	sroce_dev_catch_up(sdev, ndev);
	goto out;

err_dealloc:
	/* Calls dealloc_driver, which drops the netdev reference. */
	ib_dealloc_device(&sdev->ibdev);
out:
	put_device(&sdev->ibdev.dev);
out_net:
	put_net(net);
	return err;
}

static struct rdma_link_ops sroce_link_ops = {
	.type = SROCE_LINK_TYPE,
	.newlink = sroce_newlink,
};

static int sroce_netdev_event(struct notifier_block *nb, unsigned long event,
			      void *ptr)
{
	struct net_device *ndev = netdev_notifier_info_to_dev(ptr);
	struct sroce_dev *sdev;
	bool held = false;

	switch (event) {
	case NETDEV_UP:
	case NETDEV_DOWN:
	case NETDEV_CHANGE:
	case NETDEV_CHANGEMTU:
	case NETDEV_UNREGISTER:
		break;
	default:
		return NOTIFY_DONE;
	}

	mutex_lock(&sroce_devs_lock);
	sdev = sroce_find_live(ndev);
	if (sdev) {
		if (event == NETDEV_UNREGISTER)
			sdev->ndev_gone = true;
		/* Otherwise sroce_dev_catch_up() acts on it. */
		if (sdev->registered)
			held = ib_device_try_get(&sdev->ibdev);
	}
	mutex_unlock(&sroce_devs_lock);
	if (!held)
		return NOTIFY_DONE;

	switch (event) {
	case NETDEV_UNREGISTER:
		/*
		 * Also sent when the netdev moves to another namespace. The
		 * netdev waits (outside RTNL) for our references, which the
		 * queued unregistration releases.
		 */
		ib_unregister_device_queued(&sdev->ibdev);
		break;
	default:
		/*
		 * The active MTU is derived from the netdev on every
		 * query_port, so an MTU change needs no bookkeeping here.
		 */
		sroce_port_update(sdev, ndev);
		break;
	}
	ib_device_put(&sdev->ibdev);

	return NOTIFY_OK;
}

static struct notifier_block sroce_netdev_nb = {
	.notifier_call = sroce_netdev_event,
};

struct workqueue_struct *sroce_wq;
struct workqueue_struct *sroce_yield_wq;

static int __init sroce_init(void)
{
	int err;

	sroce_wq = alloc_workqueue("sroce", WQ_HIGHPRI | WQ_MEM_RECLAIM, 0);
	if (!sroce_wq)
		return -ENOMEM;
	sroce_yield_wq = alloc_workqueue("sroce_yield", WQ_MEM_RECLAIM, 0);
	if (!sroce_yield_wq) {
		destroy_workqueue(sroce_wq);
		return -ENOMEM;
	}

	sroce_net_init_counters();
	sroce_icrc_init();
	sroce_cc_init();
	sroce_resp_ack_init();

	err = sroce_net_register();
	if (err)
		goto out_icrc;

	err = register_netdevice_notifier(&sroce_netdev_nb);
	if (err) {
		sroce_net_unregister();
		goto out_icrc;
	}

	rdma_link_register(&sroce_link_ops);
	return 0;

out_icrc:
	sroce_icrc_fini();
	destroy_workqueue(sroce_yield_wq);
	destroy_workqueue(sroce_wq);
	return err;
}

static void __exit sroce_exit(void)
{
	/* Waits for running newlink calls; no new devices after this. */
	rdma_link_unregister(&sroce_link_ops);

	/*
	 * Every namespace's exit method forgets its devices, under the
	 * pernet lock that a namespace being deleted meanwhile also needs:
	 * its own exit cannot run while ours has a device of it off the list
	 * and the namespace still in use. The sockets go with the devices.
	 * What is left is an entry a queued unregistration has released.
	 *
	 * Keep the notifier while devices remain, so a netdev that goes away
	 * meanwhile still gets its references back. Unregistering it last
	 * also keeps its replay of DOWN/UNREGISTER events from reaching
	 * devices of ours.
	 */
	sroce_net_unregister();
	sroce_forget_devs(NULL);

	unregister_netdevice_notifier(&sroce_netdev_nb);
	/* No QP is left to owe an ACK. */
	sroce_resp_ack_fini();
	/* Nor a packet to compute an ICRC for. */
	sroce_icrc_fini();
	/* Nor a work item: every QP cancelled its own when it was destroyed. */
	destroy_workqueue(sroce_yield_wq);
	destroy_workqueue(sroce_wq);
	/*
	 * sock_wfree() may have loaded a QP socket's write_space callback
	 * (ours until destroy_qp restored the socket's own) in a task that
	 * was then preempted before it entered the callback's RCU section
	 * (callers in softirq are behind the device's grace period): wait
	 * for every such task to get off the CPU before the module's text
	 * goes.
	 */
	synchronize_rcu_tasks();
}

module_init(sroce_init);
module_exit(sroce_exit);

MODULE_DESCRIPTION("Software RoCE v2 RDMA device");
MODULE_LICENSE("GPL");
MODULE_ALIAS_RDMA_LINK(SROCE_LINK_TYPE);
