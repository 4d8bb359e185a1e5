package io.rxe4j.verbs;

import java.lang.management.ManagementFactory;
import java.util.Map;
import java.util.concurrent.atomic.AtomicInteger;
import javax.management.Attribute;
import javax.management.AttributeList;
import javax.management.AttributeNotFoundException;
import javax.management.DynamicMBean;
import javax.management.JMException;
import javax.management.MBeanAttributeInfo;
import javax.management.MBeanInfo;
import javax.management.MBeanServer;
import javax.management.ObjectName;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * A device's JMX view, registered while the device is open under {@code
 * io.rxe4j:type=RdmaDevice,address="<ip:port>",id=<n>}: one read-only {@code long} attribute per
 * {@link Counter} (named by its rxe name, e.g. {@code sent_pkts}), plus {@code Address} and
 * {@code QueuePairs}, so jconsole, JFR's JMX events or Micrometer's JMX binder can read the
 * counters from outside the process. Reading an attribute takes a counter snapshot (see {@link
 * RdmaDevice#counters()}).
 */
final class DeviceMBean implements DynamicMBean {
    private static final Logger LOG = LoggerFactory.getLogger(DeviceMBean.class);
    private static final AtomicInteger IDS = new AtomicInteger();
    private static final MBeanInfo INFO = info();

    private final RdmaDevice device;
    private ObjectName name;

    private DeviceMBean(RdmaDevice device) {
        this.device = device;
    }

    private static MBeanInfo info() {
        Counter[] cs = Counter.values();
        MBeanAttributeInfo[] attrs = new MBeanAttributeInfo[cs.length + 2];
        attrs[0] = new MBeanAttributeInfo("Address", "java.lang.String", "the device's (IP, UDP port)", true, false,
                false);
        attrs[1] = new MBeanAttributeInfo("QueuePairs", "int", "live queue pairs", true, false, false);
        for (int i = 0; i < cs.length; i++) {
            attrs[i + 2] = new MBeanAttributeInfo(cs[i].rxeName(), "long", "rxe counter " + cs[i].rxeName(), true,
                    false, false);
        }
        return new MBeanInfo(DeviceMBean.class.getName(), "rxe4j soft-RoCE device counters", attrs, null, null, null);
    }

    /** Registers a view of {@code device} with the platform MBean server; null if JMX refuses (logged). */
    static DeviceMBean register(RdmaDevice device) {
        DeviceMBean bean = new DeviceMBean(device);
        try {
            MBeanServer server = ManagementFactory.getPlatformMBeanServer();
            bean.name = new ObjectName("io.rxe4j:type=RdmaDevice,address=" + ObjectName.quote(
                    String.valueOf(device.address())) + ",id=" + IDS.incrementAndGet());
            server.registerMBean(bean, bean.name);
            return bean;
        } catch (JMException | SecurityException e) {
            LOG.warn("device {}: JMX registration failed; its counters are readable in-process only", device, e);
            return null;
        }
    }

    ObjectName name() {
        return name;
    }

    void unregister() {
        try {
            ManagementFactory.getPlatformMBeanServer().unregisterMBean(name);
        } catch (JMException e) {
            LOG.debug("unregistering {}", name, e);
        }
    }

    @Override
    public Object getAttribute(String attribute) throws AttributeNotFoundException {
        switch (attribute) {
            case "Address":
                return String.valueOf(device.address());
            case "QueuePairs":
                return device.qpsByNum.size();
            default:
                Long v = device.counters().get(attribute);
                if (v == null) {
                    throw new AttributeNotFoundException("no attribute '" + attribute + "' on " + name);
                }
                return v;
        }
    }

    @Override
    public AttributeList getAttributes(String[] attributes) {
        AttributeList l = new AttributeList();
        Map<String, Long> snapshot = device.counters();
        for (String a : attributes) {
            Object v = switch (a) {
                case "Address" -> String.valueOf(device.address());
                case "QueuePairs" -> device.qpsByNum.size();
                default -> snapshot.get(a);
            };
            if (v != null) {
                l.add(new Attribute(a, v));
            }
        }
        return l;
    }

    @Override
    public void setAttribute(Attribute attribute) throws AttributeNotFoundException {
        throw new AttributeNotFoundException("rxe4j device attributes are read-only: " + attribute.getName());
    }

    @Override
    public AttributeList setAttributes(AttributeList attributes) {
        return new AttributeList();
    }

    @Override
    public Object invoke(String actionName, Object[] params, String[] signature) {
        throw new UnsupportedOperationException("rxe4j device MBean has no operations: " + actionName);
    }

    @Override
    public MBeanInfo getMBeanInfo() {
        return INFO;
    }
}
